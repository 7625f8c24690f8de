// A small markdown renderer that builds DOM nodes. Model and tool text is
// only ever put into text nodes: a `<script>` or `<img onerror=…>` in an
// answer shows as those characters. Links keep only http(s) and mailto
// targets and open without the page's context.

import { h } from "./dom.js";

/** The DOM of markdown `text` (a fragment). */
export function markdown(text) {
  const out = document.createDocumentFragment();
  const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      const close = fence[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(close)) body.push(lines[i++]);
      i++;
      const code = h("code", fence[2] ? { class: "lang-" + fence[2] } : {}, body.join("\n"));
      out.append(h("pre", {}, code));
      continue;
    }
    if (/^\s*$/.test(line)) {
      i++;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      out.append(h("h" + Math.min(heading[1].length + 2, 6), { class: "md-h" }, inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s*([-*_])\s*\1\s*\1[\s\-*_]*$/.test(line)) {
      out.append(h("hr"));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.append(h("blockquote", {}, markdown(quoted.join("\n"))));
      continue;
    }
    const item = line.match(/^\s*([-*+]|\d+[.)])\s+/);
    if (item) {
      const ordered = /\d/.test(item[1]);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
        if (!m) {
          if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
            list.lastChild.append(" ", inline(lines[i].trim()));
            i++;
            continue;
          }
          break;
        }
        const task = m[2].match(/^\[([ xX])\]\s+(.*)$/);
        if (task) {
          list.append(h("li", {}, h("input", { type: "checkbox", disabled: true, checked: task[1] !== " ", "aria-label": "done" }), " ", inline(task[2])));
        } else {
          list.append(h("li", {}, inline(m[2])));
        }
        i++;
      }
      out.append(list);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      const cells = (l) => l.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
      const head = cells(line);
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(cells(lines[i++]));
      out.append(
        h("div", { class: "table-wrap" },
          h("table", {},
            h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, inline(c))))),
            h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, inline(c)))))))),
      );
      continue;
    }
    const para = [];
    while (
      i < lines.length &&
      lines[i].trim() &&
      !/^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d+[.)]\s)/.test(lines[i])
    ) {
      para.push(lines[i++]);
    }
    if (para.length === 0) para.push(lines[i++]);
    out.append(h("p", {}, inline(para.join("\n"))));
  }
  return out;
}

const SAFE_URL = /^(https?:|mailto:)/i;

/** Inline markdown (code, bold, italic, links) as nodes. */
export function inline(text) {
  const out = document.createDocumentFragment();
  const pattern = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<![\p{L}\p{N}_])__([^_]+)__(?![\p{L}\p{N}_])|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/gu;
  let last = 0;
  let m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > last) out.append(text.slice(last, m.index));
    if (m[1]) out.append(h("code", {}, m[2]));
    else if (m[3] || m[4]) out.append(h("strong", {}, inline(m[3] || m[4])));
    else if (m[5]) out.append(h("em", {}, inline(m[5])));
    else if (m[6]) out.append(link(m[7], inline(m[6])));
    else if (m[8]) out.append(link(m[8], m[8]));
    last = pattern.lastIndex;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

function link(url, label) {
  if (!SAFE_URL.test(url)) return document.createTextNode(typeof label === "string" ? label : label.textContent);
  return h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank" }, label);
}

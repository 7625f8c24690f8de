// Sessions: every stored session, paged, with filters; full-text search
// with the matching words highlighted; open, fork, delete.

import { h, replace, toast, fmtTime, fmtTokens, fmtCost, parseWhen } from "./dom.js";
import * as api from "./api.js";

const PAGE = 50;
const state = { offset: 0, q: "", cwd: "", model: "", since: "", until: "", status: "" };

/** `text` with the words of `q` wrapped in <mark> (as nodes). */
export function highlight(text, q) {
  const words = q.split(/\s+/).map((w) => w.replace(/[^\p{L}\p{N}_]/gu, "")).filter((w) => w.length > 1);
  const frag = document.createDocumentFragment();
  if (!words.length) {
    frag.append(text);
    return frag;
  }
  const re = new RegExp("(" + words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|") + ")", "giu");
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) frag.append(text.slice(last, m.index));
    frag.append(h("mark", {}, m[0]));
    last = m.index + m[0].length;
  }
  frag.append(text.slice(last));
  return frag;
}

/** The part of `text` around the first match of `q`. */
function snippet(text, q) {
  const first = q.split(/\s+/).find((w) => w.length > 1) || "";
  const at = first ? text.toLowerCase().indexOf(first.toLowerCase()) : -1;
  const start = Math.max(0, at - 80);
  return (start > 0 ? "…" : "") + text.slice(start, start + 240) + (text.length > start + 240 ? "…" : "");
}

function row(info, onChange) {
  const title = info.title || "(no title)";
  const status = info.busy ? "running" : info.open ? "open here" : info.ended_at ? "ended" : "not ended";
  return h(
    "li",
    { class: "session-row" },
    h("a", { href: "#/s/" + encodeURIComponent(info.id), class: "title" }, title),
    h(
      "div",
      { class: "meta" },
      h("span", { class: "status status-" + status.replace(/ /g, "-") }, status),
      h("span", {}, fmtTime(info.started_at)),
      h("span", { title: info.cwd }, info.cwd),
      h("span", {}, info.model),
      h("span", {}, info.message_count + " messages"),
      h("span", {}, fmtTokens(info.input_tokens + info.output_tokens) + " tokens"),
      h("span", {}, fmtCost(info.cost_usd)),
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "quiet", onclick: () => fork(info.id) }, "Fork"),
      h("button", { type: "button", class: "quiet danger", onclick: () => remove(info, onChange) }, "Delete"),
    ),
  );
}

async function fork(id) {
  try {
    const created = await api.post("/api/sessions", { fork: id });
    location.hash = "#/s/" + encodeURIComponent(created.id);
  } catch (err) {
    toast("Fork refused: " + err.message);
  }
}

async function remove(info, onChange) {
  if (!confirm(`Delete session “${info.title || info.id}” with its messages and subagents?`)) return;
  try {
    await api.del("/api/sessions/" + encodeURIComponent(info.id));
    toast("Deleted");
    onChange();
  } catch (err) {
    toast("Delete refused: " + err.message);
  }
}

export async function render(main) {
  const list = h("ol", { class: "sessions", id: "session-list", "aria-live": "polite" });
  const pager = h("div", { class: "pager" });
  const field = (name, label, attrs) =>
    h("label", { class: "field" }, h("span", {}, label), h("input", { name, value: state[name], ...attrs }));
  const statusSelect = h(
    "select",
    { name: "status" },
    [["", "any"], ["unended", "not ended"], ["ended", "ended"]].map(([v, l]) => h("option", { value: v, selected: state.status === v }, l)),
  );
  const form = h(
    "form",
    { class: "filters", role: "search" },
    h("label", { class: "field grow" }, h("span", {}, "Search"), h("input", { name: "q", type: "search", id: "search", value: state.q, placeholder: "words from any message" })),
    field("cwd", "Project directory", { placeholder: "/path/to/project" }),
    field("model", "Model", {}),
    field("since", "Since", { placeholder: "7d or 2026-11-01" }),
    field("until", "Until", { placeholder: "2026-11-30" }),
    h("label", { class: "field" }, h("span", {}, "Status"), statusSelect),
    h("button", { type: "submit", class: "primary" }, "Apply"),
  );
  const newButton = h("button", { type: "button", class: "primary", onclick: newSession }, "New session");
  replace(main, h("div", { class: "page-head" }, h("h1", {}, "Sessions"), newButton), form, list, pager);

  async function load() {
    replace(list, h("li", { class: "muted" }, "Loading…"));
    try {
      if (state.q.trim()) {
        const found = await api.get("/api/sessions/search" + api.query({ q: state.q, limit: 10 }));
        replace(pager);
        if (!found.hits.length) return replace(list, h("li", { class: "muted" }, "No session mentions that."));
        replace(
          list,
          found.hits.map((hit) => {
            const text = hit.message ? hit.message.content || "" : hit.session.summary || "";
            const li = row({ ...hit.session, open: false, busy: false }, load);
            li.insertBefore(h("p", { class: "snippet" }, highlight(snippet(text, state.q), state.q)), li.querySelector(".actions"));
            return li;
          }),
        );
        return;
      }
      const since_ms = parseWhen(state.since);
      const until_ms = parseWhen(state.until, true);
      if (Number.isNaN(since_ms) || Number.isNaN(until_ms)) {
        replace(pager);
        return replace(list, h("li", { class: "error", role: "alert" }, "Since and until take an age (7d, 12h) or a date (2026-11-20)."));
      }
      const params = { limit: PAGE + 1, offset: state.offset, cwd: state.cwd, model: state.model, since_ms, until_ms, status: state.status };
      const page = await api.get("/api/sessions" + api.query(params));
      const more = page.sessions.length > PAGE;
      const shown = page.sessions.slice(0, PAGE);
      replace(list, shown.length ? shown.map((s) => row(s, load)) : h("li", { class: "muted" }, "No sessions match."));
      replace(
        pager,
        h("button", { type: "button", disabled: state.offset === 0, onclick: () => { state.offset = Math.max(0, state.offset - PAGE); load(); } }, "Newer"),
        h("span", { class: "muted" }, shown.length ? `${state.offset + 1}–${state.offset + shown.length}` : ""),
        h("button", { type: "button", disabled: !more, onclick: () => { state.offset += PAGE; load(); } }, "Older"),
      );
    } catch (err) {
      replace(list, h("li", { class: "error", role: "alert" }, err.message));
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const data = new FormData(form);
    for (const key of ["q", "cwd", "model", "since", "until", "status"]) state[key] = String(data.get(key) || "");
    state.offset = 0;
    load();
  });
  await load();
}

async function newSession() {
  try {
    const created = await api.post("/api/sessions", {});
    location.hash = "#/s/" + encodeURIComponent(created.id);
  } catch (err) {
    toast("Cannot open a session: " + err.message);
  }
}

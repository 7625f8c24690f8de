// Building DOM nodes. Text always goes in as text nodes; nothing here (or
// anywhere in the UI) assigns HTML strings, so no model or tool output can
// become markup or script.

/** h("div", {class: "x", onclick: f}, "text", child, [more]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Appends strings (as text), nodes and arrays of them. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A short status message for screen readers and eyes. */
export function toast(text) {
  const el = document.getElementById("toast");
  if (!el) return;
  el.textContent = text;
  el.classList.add("shown");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => el.classList.remove("shown"), 4000);
}

export function fmtTime(ms) {
  if (ms === null || ms === undefined) return "";
  const d = new Date(ms);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function fmtTokens(n) {
  n = Number(n || 0);
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}

export function fmtCost(usd) {
  return usd === null || usd === undefined ? "unknown" : "$" + Number(usd).toFixed(4);
}

export function fmtBytes(n) {
  n = Number(n || 0);
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1024) return (n / 1024).toFixed(1) + " KiB";
  return n + " B";
}

export function fmtDuration(ms) {
  ms = Number(ms || 0);
  if (ms < 1000) return ms + " ms";
  const s = ms / 1000;
  return s < 60 ? s.toFixed(1) + " s" : Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
}

/**
 * A time as people type it — an age before now (`30m`, `24h`, `7d`, `2w`)
 * or a UTC date (`2026-11-20`, the start of that day; with `end`, the
 * start of the next) — as Unix ms; `undefined` when empty, `NaN` when not
 * a time.
 */
export function parseWhen(text, end) {
  text = String(text || "").trim();
  if (!text) return undefined;
  const age = text.match(/^(\d+)\s*([smhdw])$/);
  if (age) {
    const per = { s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5 }[age[2]];
    return Date.now() - Number(age[1]) * per;
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const ms = Date.parse(text + "T00:00:00Z");
    return end ? ms + 864e5 : ms;
  }
  const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : text + "Z");
  return ms;
}

// Usage: cost, tokens and the cache-hit share by day, model, project or
// session, from `GET /api/usage` (the query `herald usage` runs), with an
// inline SVG chart.

import { h, replace, fmtTokens, fmtCost, parseWhen } from "./dom.js";
import * as api from "./api.js";

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const share = (t) => (t.input ? Math.floor((t.cached * 100) / t.input) + "%" : "-");

/** A bar chart of `rows` by `metric` (tokens or cost). */
function chart(rows, metric, by) {
  const value = (r) => (metric === "cost" ? r.cost_usd || 0 : r.input + r.output);
  const ordered = by === "day" ? [...rows].sort((a, b) => a.key.localeCompare(b.key)) : rows.slice(0, 20);
  const max = Math.max(1e-9, ...ordered.map(value));
  const width = Math.max(320, ordered.length * 36);
  const height = 180;
  const bar = width / Math.max(1, ordered.length);
  const svg = s("svg", { viewBox: `0 0 ${width} ${height + 40}`, role: "img", class: "chart", "aria-label": `${metric} by ${by}` });
  ordered.forEach((r, i) => {
    const v = value(r);
    const bh = (v / max) * height;
    const x = i * bar + 4;
    svg.append(
      s("rect", { x, y: height - bh, width: Math.max(2, bar - 8), height: bh, class: "bar" }, s("title", {}, `${r.key}: ${metric === "cost" ? fmtCost(r.cost_usd) : fmtTokens(v) + " tokens"}`)),
      s("text", { x: x + (bar - 8) / 2, y: height + 14, "text-anchor": "middle", class: "axis" }, r.key.length > 10 ? r.key.slice(-10) : r.key),
    );
  });
  return svg;
}

export async function render(main, params) {
  const by = ["day", "model", "project", "session"].includes(params[0]) ? params[0] : "day";
  const since = params[1] || "";
  const since_ms = parseWhen(since);
  if (Number.isNaN(since_ms)) throw new Error("Since takes an age (7d, 12h) or a date (2026-11-20).");
  const report = await api.get("/api/usage" + api.query({ by, since_ms }));
  const rows = report.rows.map((r) => ({ ...r }));
  const t = report.total;
  const tabs = h(
    "nav",
    { class: "tabs", "aria-label": "Group by" },
    ["day", "model", "project", "session"].map((b) => h("a", { href: `#/usage/${b}/${encodeURIComponent(since)}`, "aria-current": b === by ? "page" : null }, b)),
  );
  const sinceForm = h("form", { class: "inline" }, h("label", { for: "since" }, "Since "), h("input", { id: "since", name: "since", value: since, placeholder: "7d, 2026-11-01" }), h("button", { type: "submit" }, "Apply"));
  sinceForm.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = `#/usage/${by}/${encodeURIComponent(sinceForm.elements.since.value)}`;
  });
  const totals = h(
    "dl",
    { class: "totals", id: "usage-total" },
    h("div", {}, h("dt", {}, "Cost"), h("dd", { dataset: { total: "cost" } }, fmtCost(t.cost_usd))),
    h("div", {}, h("dt", {}, "Requests"), h("dd", { dataset: { total: "requests" } }, t.requests)),
    h("div", {}, h("dt", {}, "Input tokens"), h("dd", { dataset: { total: "input" } }, t.input)),
    h("div", {}, h("dt", {}, "Output tokens"), h("dd", { dataset: { total: "output" } }, t.output)),
    h("div", {}, h("dt", {}, "Cache hits"), h("dd", { dataset: { total: "cache" } }, share(t))),
  );
  const table = h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id: "usage-table" },
      h("thead", {}, h("tr", {}, [by, "requests", "input", "output", "cached", "cost"].map((c) => h("th", { scope: "col" }, c)))),
      h(
        "tbody",
        {},
        rows.map((r) => h("tr", {}, h("th", { scope: "row" }, r.key), h("td", {}, r.requests), h("td", {}, r.input), h("td", {}, r.output), h("td", {}, share(r)), h("td", {}, fmtCost(r.cost_usd)))),
      ),
    ),
  );
  replace(
    main,
    h("h1", {}, "Usage"),
    tabs,
    sinceForm,
    totals,
    rows.length ? [h("h2", {}, "Tokens"), chart(rows, "tokens", by), h("h2", {}, "Cost"), chart(rows, "cost", by), table] : h("p", { class: "muted" }, "No usage recorded in this period."),
  );
}

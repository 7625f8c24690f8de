// Questions a session waits on: approvals (naming the agent that asks and
// the rule an "always" saves), clarify choices and MCP elicitation forms.
// Answers are the protocol's operations, the same the TUI sends.

import { h, replace, toast } from "./dom.js";
import * as api from "./api.js";

async function answer(sessionId, operation, card) {
  try {
    await api.op(sessionId, operation);
    card.remove();
    toast("Answered");
  } catch (err) {
    toast("Answer refused: " + err.message);
  }
}

/** The card of an approval request (an event or a pending entry). */
export function approvalCard(sessionId, req) {
  const note = h("input", { type: "text", name: "note", placeholder: "note for the model (with Deny)", "aria-label": "Note for the model" });
  const card = h("article", { class: "question card", dataset: { request: req.request_id }, "aria-label": "Approval request" });
  const decide = (decision) => () =>
    answer(sessionId, { type: "approval_decision", request_id: req.request_id, decision, ...(decision === "deny" && note.value ? { message: note.value } : {}) }, card);
  replace(
    card,
    h("h3", {}, "Approve ", h("code", {}, req.tool), "?"),
    h("p", { class: "meta" }, "asked by ", h("strong", {}, req.agent_id || "root"), req.rule ? [" · rule ", h("code", {}, req.rule)] : null),
    h("p", {}, req.reason),
    h("pre", { class: "args" }, req.arguments),
    req.allow_rule ? h("p", { class: "meta" }, "“Always” saves ", h("code", {}, req.allow_rule)) : h("p", { class: "meta" }, "No rule to save: “session” and “always” allow this call once."),
    note,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "primary", onclick: decide("once") }, "Once"),
      h("button", { type: "button", onclick: decide("session") }, "This session"),
      h("button", { type: "button", onclick: decide("always") }, "Always"),
      h("button", { type: "button", class: "danger", onclick: decide("deny") }, "Deny"),
    ),
  );
  return card;
}

/** The card of a clarify question. */
export function clarifyCard(sessionId, req) {
  const card = h("article", { class: "question card", dataset: { request: req.request_id }, "aria-label": "Question" });
  const send = (text) => answer(sessionId, { type: "clarify_answer", request_id: req.request_id, answer: text }, card);
  const free = h("input", { type: "text", name: "answer", "aria-label": "Your answer" });
  const form = h("form", { class: "inline" }, free, h("button", { type: "submit" }, "Answer"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (free.value.trim()) send(free.value);
  });
  replace(
    card,
    h("h3", {}, "Question"),
    h("p", { class: "meta" }, "asked by ", h("strong", {}, req.agent_id || "root")),
    h("p", {}, req.question),
    h("div", { class: "actions choices" }, (req.choices || []).map((c) => h("button", { type: "button", onclick: () => send(c) }, c))),
    req.allow_freetext || !(req.choices || []).length ? form : null,
  );
  return card;
}

/** The choices of an enum field: `[value, label]` pairs from `enum` (with
 * `enumNames`) or from `oneOf` / `anyOf` entries with `const` and `title`. */
function enumChoices(p) {
  if (!p) return null;
  if (Array.isArray(p.enum)) return p.enum.map((v, i) => [String(v), String((p.enumNames && p.enumNames[i]) || v)]);
  const list = p.oneOf || p.anyOf;
  if (Array.isArray(list) && list.every((o) => o && "const" in o)) return list.map((o) => [String(o.const), String(o.title || o.const)]);
  return null;
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** One field of an elicitation form: its label and control, and how to
 * read the control's value back (`undefined`: leave the field out). */
function elicitationField(requestId, name, p, required) {
  const id = "eli-" + requestId + "-" + name;
  const label = (p.title || name) + (required ? " (required)" : "");
  const hint = p.description ? h("small", { class: "meta" }, p.description) : null;
  const choices = enumChoices(p);
  const itemChoices = p.type === "array" ? enumChoices(p.items) : null;
  if (itemChoices) {
    const picked = new Set(Array.isArray(p.default) ? p.default.map(String) : []);
    const boxes = itemChoices.map(([value, text]) => h("label", { class: "check" }, h("input", { type: "checkbox", name, value, checked: picked.has(value) }), " ", text));
    const set = h("fieldset", { class: "field" }, h("legend", {}, label), hint, boxes);
    return { el: set, read: () => boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value) };
  }
  let input;
  let read;
  if (choices) {
    input = h("select", { id, name }, required ? null : h("option", { value: "" }, "—"), choices.map(([value, text]) => h("option", { value }, text)));
    if (p.default !== undefined) input.value = String(p.default);
    read = () => (input.value === "" ? undefined : input.value);
  } else if (p.type === "boolean") {
    input = h("input", { id, name, type: "checkbox", checked: p.default === true });
    read = () => input.checked;
  } else if (p.type === "number" || p.type === "integer") {
    input = h("input", { id, name, type: "number", step: p.type === "integer" ? "1" : "any", min: p.minimum, max: p.maximum, required });
    if (p.default !== undefined) input.value = String(p.default);
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else {
    input = h("input", { id, name, type: INPUT_TYPES[p.format] || "text", required, minlength: p.minLength, maxlength: p.maxLength });
    if (p.default !== undefined) input.value = String(p.default);
    read = () => (input.value === "" ? undefined : input.value);
  }
  return { el: h("label", { class: "field", for: id }, h("span", {}, label), hint, input), read };
}

/** The form of an MCP elicitation: a field per property of its schema
 * (text with its format, numbers, booleans, single and multiple choices),
 * defaults filled in. The server checks the answer against the schema; a
 * refused one leaves the form open with the reason. */
export function elicitationCard(sessionId, req) {
  const card = h("article", { class: "question card", dataset: { request: req.request_id }, "aria-label": "Form" });
  const props = (req.schema && req.schema.properties) || {};
  const required = new Set((req.schema && req.schema.required) || []);
  const fields = Object.entries(props).map(([name, p]) => [name, elicitationField(req.request_id, name, p || {}, required.has(name))]);
  const decline = () => answer(sessionId, { type: "elicitation_answer", request_id: req.request_id, action: "decline" }, card);
  const form = h(
    "form",
    {},
    fields.map(([, f]) => f.el),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Send"), h("button", { type: "button", onclick: decline }, "Decline")),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const content = {};
    for (const [name, f] of fields) {
      const value = f.read();
      if (value !== undefined) content[name] = value;
    }
    answer(sessionId, { type: "elicitation_answer", request_id: req.request_id, action: "accept", content }, card);
  });
  replace(card, h("h3", {}, "Form from ", req.server), h("p", { class: "meta" }, "asked by ", h("strong", {}, req.agent_id || "root")), h("p", {}, req.message), form);
  return card;
}

/** Open sessions with something waiting: approvals, elicitations, questions. */
async function waiting() {
  const list = await api.get("/api/sessions?open=true&include_subagents=true");
  const open = list.sessions;
  return Promise.all(
    open.map(async (s) => {
      const id = encodeURIComponent(s.id);
      const [approvals, elicitations, questions] = await Promise.all([
        api.get(`/api/sessions/${id}/approvals`).then((r) => r.approvals).catch(() => []),
        api.get(`/api/sessions/${id}/elicitations`).then((r) => r.elicitations).catch(() => []),
        api.get(`/api/sessions/${id}/questions`).then((r) => r.questions).catch(() => []),
      ]);
      return { session: s, approvals, elicitations, questions };
    }),
  );
}

/** Shows `n` waiting requests on the navigation badge. */
function showCount(n) {
  const badge = document.getElementById("question-count");
  badge.textContent = String(n);
  badge.hidden = n === 0;
}

export async function refreshCount() {
  try {
    const all = await waiting();
    showCount(all.reduce((sum, w) => sum + w.approvals.length + w.elicitations.length + w.questions.length, 0));
  } catch {
    document.getElementById("question-count").hidden = true;
  }
}

/** How often the shown Questions page asks what waits. */
const POLL_MS = 1500;

/** Every request of one poll as `[key, session, make card]`, keyed by
 * session, kind and request id. */
function requestsOf(all) {
  const out = [];
  for (const w of all) {
    const sid = w.session.id;
    for (const a of w.approvals) out.push([sid + "\u0000approval\u0000" + a.request_id, w.session, () => approvalCard(sid, a)]);
    for (const e of w.elicitations) out.push([sid + "\u0000elicitation\u0000" + e.request_id, w.session, () => elicitationCard(sid, e)]);
    for (const q of w.questions) out.push([sid + "\u0000question\u0000" + q.request_id, w.session, () => clarifyCard(sid, q)]);
  }
  return out;
}

/** The Questions page, kept live while it is shown: every ~1.5 s it asks
 * what waits and adds the cards of new requests and removes those of
 * answered or withdrawn ones, by request id. Cards that stay are never
 * redrawn, so a half-typed answer survives. Returns the cleanup that stops
 * the polling when the page is left. */
export async function render(main) {
  const empty = h("p", { class: "muted" }, "Nothing is waiting for an answer.");
  const list = h("div", { class: "waiting-list" });
  const sections = new Map();
  const cards = new Map();
  const answered = new Set();
  let stopped = false;
  let busy = false;

  const sectionOf = (session) => {
    let section = sections.get(session.id);
    if (!section) {
      section = h("section", { class: "waiting", dataset: { session: session.id } }, h("h2", {}, h("a", { href: "#/s/" + encodeURIComponent(session.id) }, session.title || session.id)));
      sections.set(session.id, section);
      list.append(section);
    }
    return section;
  };

  const apply = (all) => {
    const now = requestsOf(all);
    const keys = new Set(now.map(([key]) => key));
    for (const [key, card] of cards) {
      // A card gone from the page was answered here; a poll that started
      // before the answer must not bring it back.
      if (!card.isConnected) answered.add(key);
      if (!card.isConnected || !keys.has(key)) {
        card.remove();
        cards.delete(key);
      }
    }
    for (const [key, session, make] of now) {
      if (cards.has(key) || answered.has(key)) continue;
      const card = make();
      cards.set(key, card);
      sectionOf(session).append(card);
    }
    for (const [id, section] of sections) {
      if (!section.querySelector("article.question")) {
        section.remove();
        sections.delete(id);
      }
    }
    empty.hidden = cards.size > 0;
    showCount(now.filter(([key]) => !answered.has(key)).length);
  };

  const poll = async () => {
    if (stopped || busy || document.hidden) return;
    busy = true;
    try {
      const all = await waiting();
      if (!stopped) apply(all);
    } catch {
      // A failed poll changes nothing; the next one tries again (a 401
      // shows the login page through the API hook).
    } finally {
      busy = false;
    }
  };

  apply(await waiting());
  replace(main, h("h1", {}, "Questions"), empty, list);
  const timer = setInterval(poll, POLL_MS);
  const onVisible = () => poll();
  document.addEventListener("visibilitychange", onVisible);
  return () => {
    stopped = true;
    clearInterval(timer);
    document.removeEventListener("visibilitychange", onVisible);
  };
}

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

export async function refreshCount() {
  const badge = document.getElementById("question-count");
  try {
    const all = await waiting();
    const n = all.reduce((sum, w) => sum + w.approvals.length + w.elicitations.length + w.questions.length, 0);
    badge.textContent = String(n);
    badge.hidden = n === 0;
  } catch {
    badge.hidden = true;
  }
}

export async function render(main) {
  const all = (await waiting()).filter((w) => w.approvals.length || w.elicitations.length || w.questions.length);
  replace(
    main,
    h("h1", {}, "Questions"),
    all.length
      ? all.map((w) =>
          h(
            "section",
            { class: "waiting" },
            h("h2", {}, h("a", { href: "#/s/" + encodeURIComponent(w.session.id) }, w.session.title || w.session.id)),
            w.approvals.map((a) => approvalCard(w.session.id, a)),
            w.elicitations.map((e) => elicitationCard(w.session.id, e)),
            w.questions.map((q) => clarifyCard(w.session.id, q)),
          ),
        )
      : h("p", { class: "muted" }, "Nothing is waiting for an answer."),
  );
}

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
    h("h3", {}, "Question from ", req.agent_id || "root"),
    h("p", {}, req.question),
    h("div", { class: "actions choices" }, (req.choices || []).map((c) => h("button", { type: "button", onclick: () => send(c) }, c))),
    req.allow_freetext || !(req.choices || []).length ? form : null,
  );
  return card;
}

/** The form of an MCP elicitation (flat string, number, boolean, enum fields). */
export function elicitationCard(sessionId, req) {
  const card = h("article", { class: "question card", dataset: { request: req.request_id }, "aria-label": "Form" });
  const props = (req.schema && req.schema.properties) || {};
  const required = new Set((req.schema && req.schema.required) || []);
  const fields = Object.entries(props).map(([name, p]) => {
    const id = "eli-" + req.request_id + "-" + name;
    let input;
    if (Array.isArray(p.enum)) input = h("select", { id, name }, p.enum.map((v) => h("option", { value: v }, v)));
    else if (p.type === "boolean") input = h("input", { id, name, type: "checkbox" });
    else input = h("input", { id, name, type: p.type === "number" || p.type === "integer" ? "number" : "text", required: required.has(name) });
    return h("label", { class: "field", for: id }, h("span", {}, p.title || name), input);
  });
  const form = h("form", {}, fields, h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Send"), h("button", { type: "button", onclick: () => answer(sessionId, { type: "elicitation_answer", request_id: req.request_id, action: "decline" }, card) }, "Decline")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const content = {};
    for (const [name, p] of Object.entries(props)) {
      const el = form.elements[name];
      if (p.type === "boolean") content[name] = el.checked;
      else if (p.type === "number" || p.type === "integer") {
        if (el.value !== "") content[name] = Number(el.value);
      } else if (el.value !== "") content[name] = el.value;
    }
    answer(sessionId, { type: "elicitation_answer", request_id: req.request_id, action: "accept", content }, card);
  });
  replace(card, h("h3", {}, "Form from ", req.server), h("p", {}, req.message), form);
  return card;
}

/** Open sessions with something waiting: approvals, elicitations, questions. */
async function waiting() {
  const list = await api.get("/api/sessions?open=true&include_subagents=true");
  const open = list.sessions;
  return Promise.all(
    open.map(async (s) => {
      const id = encodeURIComponent(s.id);
      const [approvals, elicitations] = await Promise.all([
        api.get(`/api/sessions/${id}/approvals`).then((r) => r.approvals).catch(() => []),
        api.get(`/api/sessions/${id}/elicitations`).then((r) => r.elicitations).catch(() => []),
      ]);
      return { session: s, approvals, elicitations, questions: s.open_questions || [] };
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
            w.questions.length ? h("p", {}, h("a", { href: "#/s/" + encodeURIComponent(w.session.id) }, `${w.questions.length} question(s) — answer in the session`)) : null,
          ),
        )
      : h("p", { class: "muted" }, "Nothing is waiting for an answer."),
  );
}

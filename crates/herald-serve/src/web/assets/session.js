// One session: the stored conversation (newest page first, earlier pages
// on demand), then live events — streamed text, tool cells with status,
// duration, size, collapsible output and diffs, questions, the agent tree,
// the task list — and a composer that sends a turn, steers, interrupts and
// compacts, all as protocol operations.

import { h, replace, toast, fmtBytes, fmtDuration, fmtTime, fmtTokens, fmtCost } from "./dom.js";
import { markdown } from "./markdown.js";
import * as api from "./api.js";
import { AgentTree } from "./agents.js";
import { approvalCard, clarifyCard, elicitationCard } from "./questions.js";

const PAGE = 100;
const DIFF_TOOLS = new Set(["patch", "write_file", "edit_file"]);

function parseArgs(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A diff view of a patch / write_file call's arguments, if it has one. */
function diffView(name, args) {
  const a = parseArgs(args);
  if (!a) return null;
  let lines;
  if (typeof a.patch === "string") lines = a.patch.split("\n");
  else if (typeof a.diff === "string") lines = a.diff.split("\n");
  else if (name === "write_file" && typeof a.content === "string") lines = a.content.split("\n").map((l) => "+" + l);
  else if (typeof a.old_string === "string" && typeof a.new_string === "string")
    lines = [...a.old_string.split("\n").map((l) => "-" + l), ...a.new_string.split("\n").map((l) => "+" + l)];
  else return null;
  const pre = h("pre", { class: "diff" });
  for (const line of lines.slice(0, 2000)) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
    pre.append(h("span", cls ? { class: cls } : {}, line + "\n"));
  }
  return h("div", {}, a.path ? h("p", { class: "meta" }, h("code", {}, a.path)) : null, pre);
}

/** A tool call's cell: name, status, duration, size, arguments, output. */
class ToolCell {
  constructor(call) {
    this.call = call;
    this.status = h("span", { class: "status status-running" }, "running");
    this.info = h("span", { class: "meta" });
    this.output = h("pre", { class: "output" });
    const diff = DIFF_TOOLS.has(call.name) ? diffView(call.name, call.arguments) : null;
    this.el = h(
      "li",
      { class: "tool", dataset: { call: call.id } },
      h(
        "details",
        {},
        h("summary", {}, h("code", { class: "tool-name" }, call.name), " ", this.status, " ", this.info),
        diff || h("pre", { class: "args" }, call.arguments),
        this.output,
      ),
    );
  }

  done({ status, duration_ms, output_bytes, output, error, exit_code }) {
    this.status.textContent = status;
    this.status.className = "status status-" + status;
    const bits = [];
    if (duration_ms !== undefined) bits.push(fmtDuration(duration_ms));
    if (output_bytes !== undefined) bits.push(fmtBytes(output_bytes));
    if (exit_code !== undefined && exit_code !== null) bits.push("exit " + exit_code);
    this.info.textContent = bits.join(" · ");
    this.output.textContent = error ? error + (output ? "\n\n" + output : "") : output || "";
  }
}

export async function render(main, params) {
  const id = params[0];
  const readOnly = params[1] === "view";
  const enc = encodeURIComponent(id);
  const info = await api.get(`/api/sessions/${enc}`);
  const first = await api.get(`/api/sessions/${enc}/messages` + api.query({ limit: PAGE }));

  const transcript = h("ol", { class: "transcript", id: "transcript", "aria-label": "Conversation" });
  const questions = h("div", { class: "questions", id: "questions", "aria-live": "polite" });
  const todos = h("section", { class: "todos card", "aria-labelledby": "todos-title" });
  const stateLine = h("p", { class: "meta", id: "session-state", role: "status" });
  const tree = new AgentTree(id);
  const cells = new Map();
  let streaming = null;
  let busy = !!info.busy;
  let start = first.start;
  const earlier = h("button", { type: "button", class: "quiet", id: "earlier", hidden: start === 0 }, "Show earlier messages");

  // Follow the end of the conversation while the reader is there. Whether
  // they are is read on scroll events only: reading the layout on every
  // streamed piece would lay out the whole page each time and fall behind.
  let atBottom = true;
  const onScroll = () => {
    atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  };
  window.addEventListener("scroll", onScroll, { passive: true });
  function stick(fn) {
    fn();
    if (atBottom) scheduleScroll();
  }
  let scrollPending = false;
  function scheduleScroll() {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(() => {
      scrollPending = false;
      window.scrollTo(0, document.body.scrollHeight);
    });
  }

  function messageNodes(m) {
    if (m.role === "user") return [h("li", { class: "msg user" }, h("div", { class: "who" }, "You"), h("div", { class: "body" }, m.content))];
    if (m.role === "assistant") {
      const out = [];
      if (m.content) out.push(h("li", { class: "msg assistant" }, h("div", { class: "who" }, "herald"), h("div", { class: "body md" }, markdown(m.content))));
      for (const call of m.tool_calls || []) {
        const cell = new ToolCell(call);
        cells.set(call.id, cell);
        out.push(cell.el);
      }
      return out;
    }
    if (m.role === "tool") {
      const cell = cells.get(m.tool_call_id);
      const text = m.content || "";
      if (cell) cell.done({ status: m.is_error ? "error" : "ok", duration_ms: m.duration_ms, output_bytes: new Blob([text]).size, output: text.length > 20000 ? text.slice(0, 10000) + "\n[…]\n" + text.slice(-10000) : text });
      return [];
    }
    if (m.role === "system") return [h("li", { class: "msg note" }, h("div", { class: "body" }, m.content))];
    return [];
  }

  function drawTodos(list) {
    if (!Array.isArray(list) || !list.length) return replace(todos, h("h2", { id: "todos-title" }, "Tasks"), h("p", { class: "muted" }, "No task list."));
    replace(
      todos,
      h("h2", { id: "todos-title" }, "Tasks"),
      h("ul", { class: "todo-list" }, list.map((t) => h("li", { class: "todo todo-" + (t.status || "pending") }, h("span", { class: "status" }, t.status || "pending"), " ", t.content || t.text || JSON.stringify(t)))),
    );
  }

  function drawState(extra) {
    const s = busy ? "running a turn" : readOnly ? "read-only" : "idle";
    stateLine.textContent = [s, extra].filter(Boolean).join(" · ");
    for (const b of main.querySelectorAll("[data-when]")) b.disabled = b.dataset.when === "busy" ? !busy : busy;
  }

  const rendered = [];
  for (const m of first.messages) rendered.push(...messageNodes(m));
  transcript.append(...rendered);
  drawTodos(first.todos);

  earlier.addEventListener("click", async () => {
    const page = await api.get(`/api/sessions/${enc}/messages` + api.query({ limit: PAGE, before: start }));
    const nodes = [];
    for (const m of page.messages) nodes.push(...messageNodes(m));
    transcript.prepend(...nodes);
    start = page.start;
    earlier.hidden = start === 0;
  });

  // The composer.
  const input = h("textarea", { id: "composer", name: "text", rows: 3, placeholder: "Message herald (Ctrl+Enter sends; while a turn runs it steers it)", "aria-label": "Message" });
  // One message in flight at a time: a second Ctrl+Enter before the first
  // is answered would send the same text again, as a steer or, when the
  // quick turn has already ended, as a second turn.
  let sending = false;
  async function send(kind) {
    const text = input.value;
    if (!text.trim() || sending) return;
    sending = true;
    try {
      await sendNow(kind, text);
    } finally {
      sending = false;
    }
  }
  async function sendNow(kind, text) {
    if (kind === "steer") {
      try {
        await api.op(id, { type: "steer", text });
        input.value = "";
      } catch (err) {
        toast("Steer refused: " + err.message);
      }
      return;
    }
    // Busy before the request leaves: a quick turn's events (its reply and
    // `run.completed`) can arrive on the event stream before the op's own
    // response does, and must find the turn already marked as running.
    const shownMessage = h("li", { class: "msg user" }, h("div", { class: "who" }, "You"), h("div", { class: "body" }, text));
    busy = true;
    drawState();
    stick(() => transcript.append(shownMessage));
    try {
      await api.op(id, { type: "user_turn", text });
      input.value = "";
    } catch (err) {
      shownMessage.remove();
      busy = false;
      drawState();
      toast("Send refused: " + err.message);
    }
  }
  const simple = (label, op, when) =>
    h("button", {
      type: "button",
      dataset: { when },
      onclick: async () => {
        try {
          await api.op(id, op);
          toast(label + " sent");
        } catch (err) {
          toast(label + " refused: " + err.message);
        }
      },
    }, label);
  const composer = h(
    "form",
    { class: "composer card", id: "composer-form" },
    input,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "primary", dataset: { when: "idle" } }, "Send"),
      h("button", { type: "button", dataset: { when: "busy" }, onclick: () => send("steer") }, "Steer"),
      simple("Interrupt", { type: "interrupt" }, "busy"),
      simple("Compact", { type: "compact" }, "idle"),
    ),
  );
  composer.addEventListener("submit", (e) => {
    e.preventDefault();
    send(busy ? "steer" : "turn");
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send(busy ? "steer" : "turn");
    }
  });

  const title = info.title || "(new session)";
  replace(
    main,
    h(
      "div",
      { class: "page-head" },
      h("h1", {}, title),
      h("p", { class: "meta" }, fmtTime(info.started_at), " · ", info.cwd, " · ", info.model, " · ", fmtTokens(info.input_tokens + info.output_tokens), " tokens · ", fmtCost(info.cost_usd)),
      stateLine,
    ),
    h(
      "div",
      { class: "session-layout" },
      h("div", { class: "conversation" }, earlier, transcript, questions, readOnly ? null : composer),
      h("aside", { class: "side" }, tree.el, todos),
    ),
  );
  drawState();
  scheduleScroll();
  const leave = () => {
    tree.stop();
    window.removeEventListener("scroll", onScroll);
  };
  if (readOnly) return leave;

  // Live: open the session here (refused when another herald process holds
  // it), then follow its events from the last stored one.
  try {
    await api.post("/api/sessions", { resume: id });
  } catch (err) {
    drawState(err.code === "session_in_use" ? "another herald process holds it: read-only" : err.message);
    for (const b of main.querySelectorAll("[data-when], #composer")) b.disabled = true;
    return leave;
  }
  await tree.load();
  const pending = await Promise.all([
    api.get(`/api/sessions/${enc}/approvals`).then((r) => r.approvals).catch(() => []),
    api.get(`/api/sessions/${enc}/elicitations`).then((r) => r.elicitations).catch(() => []),
    api.get(`/api/sessions/${enc}/questions`).then((r) => r.questions).catch(() => []),
  ]);
  const shown = new Set();
  const addCard = (requestId, card) => {
    if (shown.has(requestId)) return;
    shown.add(requestId);
    questions.append(card);
    card.querySelector("button")?.focus({ preventScroll: true });
  };
  pending[0].forEach((a) => addCard(a.request_id, approvalCard(id, a)));
  pending[1].forEach((e) => addCard(e.request_id, elicitationCard(id, e)));
  pending[2].forEach((q) => addCard(q.request_id, clarifyCard(id, q)));
  const after = first.last_event_seq;

  function onEvent(ev) {
    const root = !ev.agent_id || ev.agent_id === "root";
    switch (ev.type) {
      case "clarify.requested":
        addCard(ev.request_id, clarifyCard(id, { ...ev }));
        return;
      case "approval.requested":
        addCard(ev.request_id, approvalCard(id, ev));
        return;
      case "elicitation.requested":
        addCard(ev.request_id, elicitationCard(id, ev));
        return;
      case "clarify.resolved":
      case "approval.resolved":
      case "elicitation.resolved":
        questions.querySelector(`[data-request="${CSS.escape(ev.request_id)}"]`)?.remove();
        return;
    }
    if (!root || ev.type.startsWith("subagent.")) {
      tree.event(ev);
      return;
    }
    switch (ev.type) {
      case "assistant.delta":
        stick(() => {
          if (!streaming) {
            streaming = document.createTextNode("");
            transcript.append(h("li", { class: "msg assistant streaming", id: "streaming" }, h("div", { class: "who" }, "herald"), h("div", { class: "body" }, streaming)));
          }
          streaming.appendData(ev.text);
        });
        break;
      case "assistant.reset":
        if (streaming) streaming.data = "";
        break;
      case "assistant.message": {
        const live = document.getElementById("streaming");
        streaming = null;
        stick(() => {
          const nodes = messageNodes({ role: "assistant", content: ev.text, tool_calls: ev.tool_calls });
          if (live) live.replaceWith(...nodes);
          else transcript.append(...nodes);
        });
        break;
      }
      case "tool.started":
        if (!cells.has(ev.call_id)) {
          const cell = new ToolCell({ id: ev.call_id, name: ev.name, arguments: ev.arguments });
          cells.set(ev.call_id, cell);
          stick(() => transcript.append(cell.el));
        }
        break;
      case "tool.completed":
        cells.get(ev.call_id)?.done(ev);
        break;
      case "compaction":
        transcript.append(h("li", { class: "msg note" }, `Compacted: ${fmtTokens(ev.tokens_before)} → ${fmtTokens(ev.tokens_after)} tokens`));
        break;
      case "error":
        transcript.append(h("li", { class: "msg note error", role: "alert" }, ev.message));
        break;
      case "run.completed":
        busy = false;
        streaming = null;
        document.getElementById("streaming")?.classList.remove("streaming");
        drawState(ev.status === "completed" ? `last turn: ${fmtDuration(ev.duration_ms)}, ${fmtCost(ev.cost_usd)}` : `last turn ${ev.status}${ev.error ? ": " + ev.error : ""}`);
        api.get(`/api/sessions/${enc}/messages?limit=1`).then((p) => drawTodos(p.todos)).catch(() => {});
        break;
    }
  }
  const stop = api.follow(id, after, onEvent, (s) => {
    if (s === "error") drawState("reconnecting…");
    if (s === "open") drawState();
  });
  return () => {
    stop();
    leave();
  };
}

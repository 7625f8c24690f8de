// The live agent tree of a session: every subagent with its status,
// current tool, tokens, cost and elapsed time, from `GET .../agents` and
// then the session's events; cancel a subtree; a live tail of a child.

import { h, replace, toast, fmtTokens, fmtCost } from "./dom.js";
import * as api from "./api.js";

const FINISHED = new Set(["completed", "failed", "error", "timeout", "interrupted", "cancelled", "suspended"]);

export class AgentTree {
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.agents = new Map();
    this.tails = new Map();
    this.el = h("section", { class: "agents card", "aria-labelledby": "agents-title" });
    this.timer = setInterval(() => this.tick(), 1000);
    this.draw();
  }

  stop() {
    clearInterval(this.timer);
  }

  async load() {
    try {
      const list = await api.get(`/api/sessions/${encodeURIComponent(this.sessionId)}/agents`);
      for (const a of list.agents) {
        this.agents.set(a.id, {
          ...this.agents.get(a.id),
          id: a.id,
          parent: a.parent_id,
          goal: a.goal,
          status: a.status,
          tool: a.current_tool,
          tokens: a.tokens,
          since: Date.now() - a.seconds * 1000,
          seconds: a.seconds,
        });
      }
      this.draw();
    } catch {
      // A session not open here has no live agents to show.
    }
  }

  /** Takes one event of the session's stream. */
  event(ev) {
    const id = ev.agent_id;
    const known = this.agents.get(id);
    switch (ev.type) {
      case "subagent.started":
        this.agents.set(id, { id, parent: ev.parent_id, goal: ev.goal, status: "running", tool: null, tokens: null, since: Date.parse(ev.ts) || Date.now(), child: ev.child_session_id, background: ev.background });
        break;
      case "subagent.tool":
        if (known) Object.assign(known, { tool: ev.tool, tokens: ev.tokens });
        break;
      case "subagent.completed":
        if (known) Object.assign(known, { status: ev.status, tool: null, tokens: ev.tokens, cost: ev.cost_usd, seconds: ev.duration_seconds, summary: ev.summary });
        break;
      default:
        if (id && id !== "root" && this.tails.has(id)) this.tail(id, ev);
        return;
    }
    this.draw();
  }

  tail(id, ev) {
    const box = this.tails.get(id);
    if (ev.type === "assistant.delta") box.append(ev.text);
    else if (ev.type === "tool.started") box.append(h("div", { class: "tail-tool" }, "→ " + ev.name));
    else if (ev.type === "tool.completed") box.append(h("div", { class: "tail-tool" }, "← " + ev.name + " " + ev.status));
    else if (ev.type === "assistant.message") box.append(h("hr"));
    box.scrollTop = box.scrollHeight;
  }

  tick() {
    for (const a of this.agents.values()) {
      if (!FINISHED.has(a.status)) {
        const cell = this.el.querySelector(`[data-elapsed="${CSS.escape(a.id)}"]`);
        if (cell) cell.textContent = Math.round((Date.now() - a.since) / 1000) + " s";
      }
    }
  }

  async cancel(id) {
    try {
      await api.op(this.sessionId, { type: "cancel_agent", agent_id: id });
      toast("Cancelling " + id);
    } catch (err) {
      toast("Cancel refused: " + err.message);
    }
  }

  draw() {
    const children = (parent) => [...this.agents.values()].filter((a) => a.parent === parent);
    const roots = [...this.agents.values()].filter((a) => !this.agents.has(a.parent));
    const node = (a) => {
      const running = !FINISHED.has(a.status);
      const elapsed = running ? Math.round((Date.now() - a.since) / 1000) : Math.round(a.seconds || 0);
      const tokens = a.tokens ? fmtTokens(a.tokens.input + a.tokens.output) : "–";
      const kids = children(a.id);
      const tailOpen = this.tails.has(a.id);
      return h(
        "li",
        { class: "agent", dataset: { agent: a.id, status: a.status } },
        h(
          "div",
          { class: "agent-line" },
          h("span", { class: "status status-" + a.status }, a.status),
          h("span", { class: "goal", title: a.goal }, a.goal),
        ),
        h(
          "div",
          { class: "meta" },
          h("span", {}, a.tool ? "tool: " + a.tool : ""),
          h("span", {}, tokens + " tokens"),
          a.cost !== undefined ? h("span", {}, fmtCost(a.cost)) : null,
          h("span", { dataset: { elapsed: a.id } }, elapsed + " s"),
        ),
        h(
          "div",
          { class: "actions" },
          running ? h("button", { type: "button", class: "quiet danger", onclick: () => this.cancel(a.id), "aria-label": "Cancel " + a.goal }, "Cancel") : null,
          h("button", { type: "button", class: "quiet", "aria-expanded": String(tailOpen), onclick: () => this.toggleTail(a.id) }, tailOpen ? "Hide live" : "Live tail"),
          a.child ? h("a", { href: "#/s/" + encodeURIComponent(a.child) + "/view" }, "Transcript") : null,
        ),
        tailOpen ? this.tails.get(a.id) : null,
        kids.length ? h("ul", {}, kids.map(node)) : null,
      );
    };
    replace(
      this.el,
      h("h2", { id: "agents-title" }, "Agents"),
      roots.length ? h("ul", { class: "tree", id: "agent-tree" }, roots.map(node)) : h("p", { class: "muted" }, "No subagents."),
    );
  }

  toggleTail(id) {
    if (this.tails.has(id)) this.tails.delete(id);
    else this.tails.set(id, h("div", { class: "tail", "aria-live": "off" }));
    this.draw();
  }
}

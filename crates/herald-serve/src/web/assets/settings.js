// Settings, read-only: the effective configuration with keys redacted, the
// doctor's checks, the MCP servers and their tools, the skills found,
// memory and learnings.

import { h, replace } from "./dom.js";
import * as api from "./api.js";

function tree(value) {
  if (value === null || typeof value !== "object") return h("code", {}, JSON.stringify(value));
  if (Array.isArray(value)) return value.length ? h("ul", {}, value.map((v) => h("li", {}, tree(v)))) : h("code", {}, "[]");
  return h("dl", { class: "kv" }, Object.entries(value).map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, tree(v)))));
}

/** The doctor's report as a table: check, status, detail (with the fix). */
function doctorTable(report) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
    "table",
    { class: "doctor", id: "doctor-checks" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Check"), h("th", { scope: "col" }, "Status"), h("th", { scope: "col" }, "Detail"))),
    h(
      "tbody",
      {},
      report.checks.map((c) =>
        h("tr", { dataset: { check: c.name, status: c.status } }, h("td", {}, h("code", {}, c.name)), h("td", {}, h("span", { class: "status status-" + c.status }, c.status)), h("td", {}, c.detail)),
      ),
    ),
    ),
  );
}

/** Runs the doctor (it may take seconds: the provider is probed) and
 * fills `section` with its report. */
async function drawDoctor(section) {
  const title = h("h2", {}, "Doctor");
  replace(section, title, h("p", { class: "muted" }, "Running the checks…"));
  try {
    const report = await api.get("/api/doctor");
    const failed = report.checks.filter((c) => c.status === "fail").length;
    replace(
      section,
      title,
      h("p", { class: report.ok ? "meta" : "error", id: "doctor-summary" }, report.ok ? "Every check passed (warnings do not stop herald)." : `${failed} check(s) failed: see the detail for the fix.`),
      doctorTable(report),
    );
  } catch (err) {
    replace(section, title, h("p", { class: "error" }, "The doctor could not run: " + err.message));
  }
}

export async function render(main) {
  const s = await api.get("/api/settings");
  const doctor = h("section", { class: "card", id: "doctor" });
  replace(
    main,
    h("h1", {}, "Settings"),
    h("p", { class: "muted" }, "Read-only; change them in config.toml and restart herald serve."),
    doctor,
    h("section", { class: "card" }, h("h2", {}, "Configuration"), tree(s.config)),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "MCP servers"),
      s.mcp_servers.length
        ? h("ul", {}, s.mcp_servers.map((m) => h("li", {}, h("strong", {}, m.name), " ", h("span", { class: "status status-" + m.state }, m.state), m.message ? h("p", { class: "error" }, m.message) : null, m.tools.length ? h("ul", {}, m.tools.map((t) => h("li", {}, h("code", {}, t.name), " — ", t.description))) : null)))
        : h("p", { class: "muted" }, "No MCP servers configured."),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Skills"),
      s.skills.skills.length
        ? h("ul", {}, s.skills.skills.map((k) => h("li", {}, h("strong", {}, k.name), " — ", k.description)))
        : h("p", { class: "muted" }, "No skills found."),
      s.skills.rejected.length ? h("details", {}, h("summary", {}, `${s.skills.rejected.length} refused`), tree(s.skills.rejected)) : null,
    ),
    h(
      "section",
      { class: "card", id: "memory" },
      h("h2", {}, "Memory"),
      [["memory", "MEMORY.md (the agent's notes)"], ["user", "USER.md (about you)"]].map(([key, label]) => {
        const file = s.memory[key];
        return h("div", {}, h("h3", {}, label), file.error ? h("p", { class: "muted" }, file.error) : file.entries.length ? h("ul", {}, file.entries.map((e) => h("li", {}, e))) : h("p", { class: "muted" }, "Empty."));
      }),
    ),
    h(
      "section",
      { class: "card", id: "learnings" },
      h("h2", {}, "Learnings"),
      s.learnings.length
        ? h("ul", {}, s.learnings.map((l) => h("li", {}, h("strong", {}, l.pattern), " — ", l.lesson || l.fix || "")))
        : h("p", { class: "muted" }, "No learnings yet."),
    ),
  );
  drawDoctor(doctor);
}

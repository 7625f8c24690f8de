// Settings, read-only: the effective configuration with keys redacted, the
// MCP servers and their tools, the skills found.

import { h, replace } from "./dom.js";
import * as api from "./api.js";

function tree(value) {
  if (value === null || typeof value !== "object") return h("code", {}, JSON.stringify(value));
  if (Array.isArray(value)) return value.length ? h("ul", {}, value.map((v) => h("li", {}, tree(v)))) : h("code", {}, "[]");
  return h("dl", { class: "kv" }, Object.entries(value).map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, tree(v)))));
}

export async function render(main) {
  const s = await api.get("/api/settings");
  replace(
    main,
    h("h1", {}, "Settings"),
    h("p", { class: "muted" }, "Read-only; change them in config.toml and restart herald serve."),
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
  );
}

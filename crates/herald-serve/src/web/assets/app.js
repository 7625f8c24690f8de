// The router and the login. Pages are modules with `render(main, params)`
// returning an optional cleanup function (closing event streams).

import { h, replace, toast } from "./dom.js";
import * as api from "./api.js";
import * as sessions from "./sessions.js";
import * as session from "./session.js";
import * as questions from "./questions.js";
import * as usage from "./usage.js";
import * as settings from "./settings.js";

const main = document.getElementById("main");
let cleanup = null;
let loggedIn = false;

const LOGIN_REASONS = {
  "code-refused": "That login link was already used or is wrong. Log in with the token instead.",
  "too-many": "Too many failed logins from this address; wait a minute and try again.",
};

function loginPage(reason) {
  document.getElementById("logout").hidden = true;
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "current-password", required: true });
  const error = h("p", { class: "error", role: "alert", id: "login-error" }, LOGIN_REASONS[reason] || "");
  const form = h(
    "form",
    { class: "login card", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Log in to herald"),
    h("p", { class: "muted" }, "Open the login link herald serve printed, or paste its token (--token, HERALD_SERVE_TOKEN, or $HERALD_HOME/serve.token)."),
    h("label", { for: "token" }, "Token"),
    input,
    h("button", { type: "submit", class: "primary" }, "Log in"),
    error,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api.post("/api/login", { token: input.value });
      loggedIn = true;
      location.hash = "#/sessions";
      route();
    } catch (err) {
      error.textContent = err.status === 401 ? "The token is wrong." : err.message;
      input.select();
    }
  });
  replace(main, form);
  input.focus();
}

api.hooks.unauthorized = () => {
  loggedIn = false;
  if (cleanup) cleanup();
  cleanup = null;
  loginPage();
};

const PAGES = {
  sessions: (params) => sessions.render(main, params),
  s: (params) => session.render(main, params),
  questions: (params) => questions.render(main, params),
  usage: (params) => usage.render(main, params),
  settings: (params) => settings.render(main, params),
};

async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const name = parts[0] || "sessions";
  if (cleanup) cleanup();
  cleanup = null;
  if (name === "login") return loginPage(parts[1]);
  if (!loggedIn) {
    try {
      await api.get("/api/sessions?limit=1");
      loggedIn = true;
    } catch (err) {
      if (err.status === 401) return loginPage();
      replace(main, h("p", { class: "error" }, err.message));
      return;
    }
  }
  document.getElementById("logout").hidden = false;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.page === (name === "s" ? "sessions" : name)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const page = PAGES[name] || PAGES.sessions;
  try {
    cleanup = (await page(parts.slice(1))) || null;
  } catch (err) {
    if (err.status !== 401) replace(main, h("p", { class: "error", role: "alert" }, err.message));
  }
  questions.refreshCount();
}

document.getElementById("logout").addEventListener("click", async () => {
  await api.post("/api/logout").catch(() => {});
  loggedIn = false;
  toast("Logged out");
  location.hash = "#/login";
});

window.addEventListener("hashchange", route);
route();
setInterval(() => loggedIn && questions.refreshCount(), 5000);

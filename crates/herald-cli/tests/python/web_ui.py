"""Drives herald's web UI in Debian's Chromium with Playwright, for
crates/herald-cli/tests/suite/web_ui.rs. One scenario per run (argv[1]);
prints one JSON object of what it saw on stdout. Environment: HERALD_URL,
HERALD_LOGIN_URL, HERALD_TOKEN, CHROMIUM, SHOTS (a directory for
screenshots)."""

import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

from playwright.sync_api import expect, sync_playwright

URL = os.environ["HERALD_URL"]
LOGIN = os.environ["HERALD_LOGIN_URL"]
TOKEN = os.environ["HERALD_TOKEN"]
CHROMIUM = os.environ["CHROMIUM"]
SHOTS = os.environ["SHOTS"]
HOSTPORT = urllib.parse.urlparse(URL).netloc
SEEN = {}


def api(method, path, body=None, headers=None):
    """A request with the bearer token: (status, JSON body or None)."""
    conn = http.client.HTTPConnection(HOSTPORT, timeout=30)
    h = {"Authorization": "Bearer " + TOKEN}
    h.update(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body)
        h["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    text = r.read()
    conn.close()
    try:
        return r.status, json.loads(text) if text else None
    except ValueError:
        return r.status, None


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, name + ".png"), full_page=True)


def session_count():
    status, body = api("GET", "/api/sessions?limit=0&include_subagents=true")
    assert status == 200, (status, body)
    return len(body["sessions"])


def log_in(page):
    page.goto(LOGIN)
    page.wait_for_url(URL + "/")
    expect(page.locator("#session-list")).to_be_visible()


def new_session(page):
    page.goto(URL + "/#/sessions")
    page.get_by_role("button", name="New session").click()
    expect(page.locator("#composer")).to_be_visible()
    expect(page.locator("#session-state")).to_contain_text("idle")


def question_on_page(page, text, timeout=30):
    """The card on the Questions page holding `text`, reloading the page
    until it is listed (the page lists what waits when it is drawn)."""
    deadline = time.monotonic() + timeout
    while True:
        card = page.locator("main article.question", has_text=text)
        if card.count() > 0:
            return card.first
        if time.monotonic() > deadline:
            raise AssertionError("no question card holding %r on the Questions page: %s" % (text, page.locator("main").inner_text()))
        time.sleep(0.3)
        page.goto(URL + "/#/questions")
        page.reload()
        expect(page.get_by_role("heading", name="Questions")).to_be_visible()


def send(page, text):
    page.locator("#composer").fill(text)
    page.locator("#composer").press("Control+Enter")


CONTRAST_JS = """() => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((m, n) => n - m); return (x + 0.05) / (y + 0.05); };
  const bgOf = (el) => {
    for (; el; el = el.parentElement) {
      const c = getComputedStyle(el).backgroundColor;
      if (c && !/^rgba\\(.*,\\s*0\\)$/.test(c) && c !== "transparent") return c;
    }
    return getComputedStyle(document.body).backgroundColor;
  };
  const out = {};
  for (const sel of ["body", ".muted", ".meta", "a", ".status", "button.primary", "button", "mark", "input"]) {
    const el = document.querySelector(sel);
    if (!el || el.disabled) continue;
    out[sel] = Math.round(ratio(getComputedStyle(el).color, bgOf(el)) * 100) / 100;
  }
  return out;
}"""


def contrast(browser, scheme):
    """Text contrast ratios of the search page in one colour scheme."""
    ctx = browser.new_context(color_scheme=scheme)
    page = ctx.new_page()
    page.goto(URL + "/")
    page.locator("#token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    page.locator("#search").fill("zebra")
    page.locator("#search").press("Enter")
    expect(page.locator("#session-list mark").first).to_be_visible()
    shot(page, "search-" + scheme)
    ratios = page.evaluate(CONTRAST_JS)
    ctx.close()
    return ratios


def basics(p):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    # A request without the cookie is refused.
    fresh = browser.new_context()
    r = fresh.request.get(URL + "/api/sessions")
    SEEN["no_cookie_status"] = r.status
    fresh.close()
    # A forged Host (DNS rebinding) is refused, with or without the token.
    status, body = api("GET", "/api/sessions", headers={"Host": "rebound.example:" + HOSTPORT.split(":")[1]})
    SEEN["forged_host"] = [status, (body or {}).get("error", {}).get("code")]

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    log_in(page)
    cookies = context.cookies()
    SEEN["cookie"] = [{"name": c["name"], "httpOnly": c["httpOnly"], "sameSite": c["sameSite"]} for c in cookies]
    shot(page, "sessions")

    # Full-text search with a highlighted snippet.
    page.locator("#search").fill("zebra")
    page.locator("#search").press("Enter")
    mark = page.locator("#session-list mark").first
    expect(mark).to_be_visible()
    SEEN["search_mark"] = mark.inner_text()
    SEEN["search_snippet"] = page.locator("#session-list .snippet").first.inner_text()
    shot(page, "search")

    # A scripted turn streams into the page.
    new_session(page)
    page.evaluate(
        """() => {
          window.__updates = 0;
          new MutationObserver((records) => {
            for (const r of records) if (r.type === "characterData" || r.type === "childList") window.__updates++;
          }).observe(document.getElementById("transcript"), {subtree: true, characterData: true, childList: true});
        }"""
    )
    started = time.monotonic()
    send(page, "stream a long answer")
    expect(page.locator("#streaming")).to_be_visible(timeout=20000)
    partial = len(page.locator("#streaming").inner_text())
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("END-OF-LONG-ANSWER", timeout=60000)
    SEEN["stream_seconds"] = round(time.monotonic() - started, 3)
    SEEN["stream_partial_chars"] = partial
    SEEN["stream_updates"] = page.evaluate("window.__updates")
    SEEN["stream_final_chars"] = len(page.locator(".msg.assistant .body.md").last.inner_text())
    expect(page.locator("#session-state")).to_contain_text("idle", timeout=20000)

    # Model output holding markup is shown as text.
    new_session(page)
    send(page, "show me html")
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("after the image", timeout=20000)
    body = page.locator(".msg.assistant .body.md").last
    SEEN["xss_text"] = body.inner_text()
    SEEN["xss_img_elements"] = body.locator("img").count()
    SEEN["xss_script_elements"] = page.locator("#transcript script").count()
    SEEN["xss_flag"] = page.evaluate("window.__xss === undefined ? null : window.__xss")
    shot(page, "session")

    # Usage totals as the page shows them.
    page.goto(URL + "/#/usage/model/")
    expect(page.locator("#usage-total")).to_be_visible()
    SEEN["usage"] = {
        k: page.locator(f'[data-total="{k}"]').inner_text() for k in ["requests", "input", "output", "cost"]
    }
    SEEN["usage_chart_bars"] = page.locator("svg.chart rect").count()
    shot(page, "usage")
    page.goto(URL + "/#/settings")
    expect(page.get_by_role("heading", name="Configuration")).to_be_visible()
    SEEN["settings_text"] = page.locator("main").inner_text()
    shot(page, "settings")
    page.goto(URL + "/#/questions")
    expect(page.get_by_role("heading", name="Questions")).to_be_visible()
    shot(page, "questions")

    # Keyboard alone: Tab reaches the navigation and Enter follows it.
    page.goto(URL + "/#/sessions")
    page.reload()
    expect(page.locator("#session-list")).to_be_visible()
    reached = None
    for _ in range(12):
        page.keyboard.press("Tab")
        name = page.evaluate("document.activeElement && document.activeElement.textContent.trim()")
        if name and name.startswith("Usage"):
            reached = name
            page.keyboard.press("Enter")
            break
    SEEN["keyboard_reached"] = reached
    expect(page.locator("#usage-total")).to_be_visible()

    # A cross-origin page POSTs with the browser's cookie: refused.
    before = session_count()

    class Evil(BaseHTTPRequestHandler):
        def do_GET(self):
            html = (
                "<!doctype html><title>evil</title><script>"
                f"fetch('{URL}/api/sessions', {{method: 'POST', mode: 'no-cors', credentials: 'include', body: '{{}}'}})"
                ".then(() => document.title = 'sent', () => document.title = 'failed');"
                "</script>"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args):
            pass

    evil = HTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    other = context.new_page()
    other.goto(f"http://127.0.0.1:{evil.server_address[1]}/")
    other.wait_for_function("document.title !== 'evil'")
    SEEN["cross_origin_fetch"] = other.title()
    time.sleep(0.5)
    SEEN["sessions_before_cross_origin"] = before
    SEEN["sessions_after_cross_origin"] = session_count()
    evil.shutdown()
    # The same POST from the UI's own origin with the cookie works.
    status = page.evaluate(
        "fetch('/api/sessions', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status)"
    )
    SEEN["same_origin_post"] = status

    # A phone: 360 px wide, nothing scrolls sideways.
    phone = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True, device_scale_factor=2)
    mobile = phone.new_page()
    # The one-time code is used up: this browser logs in with the token.
    mobile.goto(URL + "/")
    mobile.locator("#token").fill(TOKEN)
    mobile.get_by_role("button", name="Log in").click()
    expect(mobile.locator("#session-list")).to_be_visible()
    widths = {"sessions": mobile.evaluate("document.documentElement.scrollWidth")}
    shot(mobile, "phone-sessions")
    mobile.locator("#session-list .title", has_text="show me html").click()
    expect(mobile.locator("#transcript .msg.assistant").last).to_contain_text("after the image")
    widths["session"] = mobile.evaluate("document.documentElement.scrollWidth")
    shot(mobile, "phone-session")
    mobile.goto(URL + "/#/usage")
    expect(mobile.locator("#usage-total")).to_be_visible()
    widths["usage"] = mobile.evaluate("document.documentElement.scrollWidth")
    shot(mobile, "phone-usage")
    SEEN["phone_widths"] = widths
    SEEN["contrast"] = {scheme: contrast(browser, scheme) for scheme in ["light", "dark"]}
    SEEN["console_errors"] = [e for e in errors if "favicon" not in e]
    browser.close()


def delegation(p):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page)
    new_session(page)
    send(page, "fan out three")
    tree = page.locator("#agent-tree")
    expect(tree.locator(".agent")).to_have_count(3, timeout=30000)
    counts = []
    counts.append(tree.locator('.agent[data-status="running"]').count())
    victim = tree.locator(".agent", has_text="child two")
    expect(victim.locator(".meta")).to_contain_text("tool: terminal", timeout=30000)
    shot(page, "agents-running")
    victim.get_by_role("button", name="Cancel").click()
    expect(victim).to_have_attribute("data-status", "interrupted", timeout=30000)
    for goal in ["child one", "child three"]:
        expect(tree.locator(".agent", has_text=goal)).to_have_attribute("data-status", "completed", timeout=60000)
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("fan-out done", timeout=60000)
    SEEN["running_at_start"] = counts[0]
    SEEN["statuses"] = {
        goal: tree.locator(".agent", has_text=goal).get_attribute("data-status")
        for goal in ["child one", "child two", "child three"]
    }
    shot(page, "agents-done")
    browser.close()


def questions(p):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page)
    new_session(page)
    send(page, "clean the build")
    card = page.locator("#questions article.question").first
    expect(card).to_contain_text("terminal", timeout=30000)
    SEEN["approval_card"] = card.inner_text()
    shot(page, "approval")
    # The Questions page lists it too, with the same buttons.
    page.goto(URL + "/#/questions")
    listed = page.locator("article.question").first
    expect(listed).to_contain_text("rm -rf build_dir")
    SEEN["questions_page"] = listed.inner_text()
    shot(page, "questions-waiting")
    page.go_back()
    card = page.locator("#questions article.question").first
    expect(card).to_contain_text("terminal", timeout=30000)
    session_url = page.url
    card.get_by_role("button", name="Once").click()
    clarify = page.locator("#questions article.question", has_text="Which colour?")
    expect(clarify).to_be_visible(timeout=30000)
    SEEN["clarify_card"] = clarify.inner_text()
    shot(page, "clarify")
    # Answered from the Questions page: choices as buttons.
    page.goto(URL + "/#/questions")
    listed = question_on_page(page, "Which colour?")
    SEEN["questions_page_clarify"] = listed.inner_text()
    SEEN["questions_page_clarify_free_text"] = listed.locator("input[name=answer]").count()
    shot(page, "questions-clarify")
    listed.get_by_role("button", name="blue").click()
    expect(page.locator("main article.question", has_text="Which colour?")).to_have_count(0)
    # The next one allows free text besides its choice.
    free = question_on_page(page, "Anything else?")
    SEEN["questions_page_free_choices"] = free.locator(".choices button").all_inner_texts()
    free.locator("input[name=answer]").fill("paint it teal")
    shot(page, "questions-free-text")
    free.get_by_role("button", name="Answer").click()
    expect(page.locator("main article.question", has_text="Anything else?")).to_have_count(0)
    page.goto(session_url)
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("cleared, and blue it is", timeout=30000)
    SEEN["cards_left"] = page.locator("#questions article.question").count()
    browser.close()


def questions_live(p):
    """The Questions page, open before anything is asked, shows requests as
    they come and drops them once answered, without a reload; a card the
    user types into survives the polls."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watcher = context.new_page()
    log_in(watcher)
    watcher.goto(URL + "/#/questions")
    expect(watcher.get_by_text("Nothing is waiting for an answer.")).to_be_visible()
    # A reload would wipe this marker.
    watcher.evaluate("window.__sameDocument = 'kept'")
    SEEN["empty_at_start"] = watcher.locator("main article.question").count()
    # The question is asked in another tab, after the page is drawn.
    asker = context.new_page()
    asker.goto(URL + "/#/sessions")
    new_session(asker)
    send(asker, "clean the build")
    own = asker.locator("#questions article.question", has_text="terminal")
    expect(own).to_be_visible(timeout=30000)
    # Measured from the session page's card (drawn from the event stream).
    asked = time.monotonic()
    approval = watcher.locator("main article.question", has_text="rm -rf build_dir")
    expect(approval).to_be_visible(timeout=15000)
    SEEN["appear_ms"] = round((time.monotonic() - asked) * 1000)
    SEEN["live_approval"] = approval.inner_text()
    SEEN["empty_hidden"] = watcher.get_by_text("Nothing is waiting for an answer.").is_hidden()
    shot(watcher, "live-approval")
    # Answered in the other tab: the card leaves the watching page.
    own.get_by_role("button", name="Once").click()
    answered = time.monotonic()
    expect(approval).to_have_count(0, timeout=15000)
    SEEN["disappear_ms"] = round((time.monotonic() - answered) * 1000)
    colour = watcher.locator("main article.question", has_text="Which colour?")
    expect(colour).to_be_visible(timeout=15000)
    asker.locator("#questions article.question", has_text="Which colour?").get_by_role("button", name="blue").click()
    expect(colour).to_have_count(0, timeout=15000)
    # Typing into a card while polls run: the same element keeps the text.
    free = watcher.locator("main article.question", has_text="Anything else?")
    expect(free).to_be_visible(timeout=15000)
    free.locator("input[name=answer]").fill("paint it teal")
    free.evaluate("el => { el.__marked = true; }")
    watcher.wait_for_timeout(4000)
    SEEN["typed_after_polls"] = free.locator("input[name=answer]").input_value()
    SEEN["same_card_after_polls"] = free.evaluate("el => el.__marked === true")
    shot(watcher, "live-typing")
    free.get_by_role("button", name="Answer").click()
    expect(free).to_have_count(0, timeout=15000)
    expect(asker.locator(".msg.assistant .body.md").last).to_contain_text("cleared, and blue it is", timeout=30000)
    # Stays gone after more polls (no stale poll brings it back).
    watcher.wait_for_timeout(3000)
    SEEN["cards_left"] = watcher.locator("main article.question").count()
    SEEN["empty_shown_again"] = watcher.get_by_text("Nothing is waiting for an answer.").is_visible()
    SEEN["badge_hidden"] = watcher.locator("#question-count").is_hidden()
    SEEN["no_reload"] = watcher.evaluate("window.__sameDocument") == "kept"
    browser.close()


def elicitation(p):
    """An MCP server's form, answered from the Questions page."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    log_in(page)
    new_session(page)
    session_url = page.url
    send(page, "fill in the form")
    page.goto(URL + "/#/questions")
    form = question_on_page(page, "Form from")
    SEEN["form_text"] = form.inner_text()
    SEEN["form_fields"] = form.locator("[name]").evaluate_all("els => els.map(e => e.name)")
    form.locator("[name=name]").fill("Grace Hopper")
    form.locator("[name=integer]").fill("9")
    shot(page, "questions-form")
    form.get_by_role("button", name="Send").click()
    expect(page.locator("main article.question")).to_have_count(0, timeout=30000)
    page.goto(session_url)
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("tool said", timeout=30000)
    SEEN["answer"] = page.locator(".msg.assistant .body.md").last.inner_text()
    SEEN["console_errors"] = [e for e in errors if "favicon" not in e]
    browser.close()


def composer(p):
    """Steer a running turn, interrupt one, compact the conversation."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page)
    new_session(page)
    send(page, "work slowly")
    cell = page.locator("li.tool", has_text="terminal").first
    expect(cell.locator(".status")).to_have_text("running", timeout=30000)
    page.locator("#composer").fill("also tidy the blue folder")
    page.get_by_role("button", name="Steer").click()
    expect(page.locator("#composer")).to_have_value("")
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("slow work done", timeout=30000)
    expect(page.locator("#session-state")).to_contain_text("idle", timeout=30000)
    SEEN["live_tool_info"] = cell.locator("summary").inner_text()
    # The stored transcript shows the call's duration too.
    page.reload()
    stored = page.locator("li.tool", has_text="terminal").first
    expect(stored.locator(".status")).to_have_text("ok", timeout=30000)
    SEEN["stored_tool_info"] = stored.locator("summary").inner_text()
    shot(page, "steered")

    # A second turn, then compaction summarises the middle. The turn's
    # response is held back until its reply has streamed in, so its
    # `run.completed` reaches the page before the op's own response does:
    # the page must still end idle.
    ops_sent = []

    def late_response(route):
        ops_sent.append(json.loads(route.request.post_data)["type"])
        response = route.fetch()
        page.wait_for_timeout(2000)
        route.fulfill(response=response)

    page.route("**/api/sessions/*/ops", late_response)
    send(page, "one more thing")
    # A second Ctrl+Enter while the first is unanswered sends nothing.
    page.locator("#composer").press("Control+Enter")
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("noted", timeout=30000)
    # The composer empties once the held-back response has arrived.
    expect(page.locator("#composer")).to_have_value("", timeout=30000)
    expect(page.locator("#session-state")).to_contain_text("idle", timeout=30000)
    page.unroute("**/api/sessions/*/ops")
    SEEN["ops_while_held"] = ops_sent
    SEEN["user_before_reply"] = page.locator(".msg").evaluate_all(
        "els => els.map(e => e.classList.contains('user') ? 'user' : e.classList.contains('assistant') ? 'assistant' : 'other').slice(-2)"
    )
    page.get_by_role("button", name="Compact").click()
    note = page.locator(".msg.note", has_text="Compacted")
    expect(note).to_be_visible(timeout=30000)
    SEEN["compaction_note"] = note.inner_text()
    shot(page, "compacted")

    # Interrupt stops a turn that would never end.
    new_session(page)
    send(page, "run forever")
    expect(page.locator("#streaming")).to_contain_text("lorem", timeout=30000)
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    page.get_by_role("button", name="Interrupt").click()
    expect(page.locator("#session-state")).to_contain_text("interrupted", timeout=30000)
    SEEN["after_interrupt"] = page.locator("#session-state").inner_text()
    SEEN["send_enabled_again"] = page.get_by_role("button", name="Send").is_enabled()
    shot(page, "interrupted")
    browser.close()


def doctor(p):
    """The doctor's checks on the Settings page."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page)
    page.goto(URL + "/#/settings")
    rows = page.locator("#doctor-checks tbody tr")
    expect(rows.first).to_be_visible(timeout=30000)
    SEEN["checks"] = rows.evaluate_all(
        "rs => rs.map(r => ({name: r.dataset.check, status: r.dataset.status, shown: r.cells[1].innerText, detail: r.cells[2].innerText}))"
    )
    SEEN["summary"] = page.locator("#doctor-summary").inner_text()
    shot(page, "settings-doctor")
    phone = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True, device_scale_factor=2)
    mobile = phone.new_page()
    mobile.goto(URL + "/")
    mobile.locator("#token").fill(TOKEN)
    mobile.get_by_role("button", name="Log in").click()
    mobile.goto(URL + "/#/settings")
    expect(mobile.locator("#doctor-checks tbody tr").first).to_be_visible(timeout=30000)
    SEEN["phone_width"] = mobile.evaluate("document.documentElement.scrollWidth")
    # What sticks out, should anything: tag, class and right edge.
    SEEN["phone_wide"] = mobile.evaluate(
        """() => [...document.querySelectorAll("main *")]
            .filter((e) => e.getBoundingClientRect().right > 361)
            .slice(0, 5)
            .map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))"""
    )
    shot(mobile, "phone-settings-doctor")
    browser.close()


def bench(p):
    """Timings of large stores and a long stream (see docs/BENCHMARKS.md)."""
    big = os.environ["BIG_SESSION"]
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page)
    # The session list of a 10,000-session store, from a fresh page load.
    page.goto("about:blank")
    page.goto(URL + "/#/sessions")
    expect(page.locator("#session-list .session-row")).to_have_count(50, timeout=30000)
    SEEN["list_first_screen_ms"] = page.evaluate("performance.now()")
    SEEN["list_last_page_api_ms"] = page.evaluate(
        """async () => { const t = performance.now();
           const r = await fetch('/api/sessions?limit=51&offset=9950'); await r.json();
           return performance.now() - t; }"""
    )
    SEEN["search_api_ms"] = page.evaluate(
        """async () => { const t = performance.now();
           const r = await fetch('/api/sessions/search?q=parser&limit=10'); await r.json();
           return performance.now() - t; }"""
    )
    # The first screen of the 2,000-message session, from a fresh page load
    # (navigation start to its newest messages drawn).
    page.goto("about:blank")
    page.goto(URL + "/#/s/" + big)
    expect(page.locator("#transcript > li").first).to_be_visible(timeout=30000)
    SEEN["big_first_screen_ms"] = page.evaluate("performance.now()")
    SEEN["big_rendered_items"] = page.locator("#transcript > li").count()
    SEEN["big_tool_info"] = page.locator("#transcript li.tool summary").last.inner_text()
    SEEN["big_messages_api_ms"] = page.evaluate(
        """async (id) => { const t = performance.now();
           const r = await fetch('/api/sessions/' + encodeURIComponent(id) + '/messages?limit=100'); await r.json();
           return performance.now() - t; }""",
        big,
    )
    shot(page, "big-session")
    # A 20,000-token answer streamed live.
    new_session(page)
    page.evaluate(
        """() => {
          window.__times = [];
          window.__lags = [];
          window.__lastDelta = 0;
          new MutationObserver(() => window.__times.push(performance.now()))
            .observe(document.getElementById("transcript"), {subtree: true, characterData: true, childList: true});
          // A second follower on the same page: how late each piece of the
          // answer is handled on the page's (busy) main thread.
          const id = decodeURIComponent(location.hash.split("/")[2]);
          const source = new EventSource("/api/sessions/" + encodeURIComponent(id) + "/events");
          source.onmessage = (m) => {
            const ev = JSON.parse(m.data);
            if (ev.type === "assistant.delta") {
              window.__lags.push(Date.now() - Date.parse(ev.ts));
              window.__lastDelta = performance.now();
            }
          };
          window.__source = source;
        }"""
    )
    time.sleep(0.5)
    start = page.evaluate("performance.now()")
    send(page, "stream twenty thousand tokens")
    expect(page.locator(".msg.assistant .body.md").last).to_contain_text("END-OF-STREAM", timeout=180000)
    end = page.evaluate("performance.now()")
    times = page.evaluate("window.__times")
    lags = sorted(page.evaluate("window.__lags"))
    gaps = [b - a for a, b in zip(times, times[1:])]
    SEEN["stream_total_ms"] = end - start
    SEEN["stream_updates"] = len(times)
    SEEN["stream_max_gap_ms"] = max(gaps) if gaps else None
    SEEN["delta_events"] = len(lags)
    SEEN["delta_lag_median_ms"] = lags[len(lags) // 2] if lags else None
    SEEN["delta_lag_p95_ms"] = lags[int(len(lags) * 0.95)] if lags else None
    SEEN["delta_lag_max_ms"] = lags[-1] if lags else None
    SEEN["final_after_last_delta_ms"] = end - page.evaluate("window.__lastDelta")
    SEEN["stream_chars"] = len(page.locator(".msg.assistant .body.md").last.inner_text())
    shot(page, "long-stream")
    browser.close()


def main():
    scenario = sys.argv[1]
    with sync_playwright() as p:
        scenarios = {
            "basics": basics,
            "delegation": delegation,
            "questions": questions,
            "questions_live": questions_live,
            "elicitation": elicitation,
            "composer": composer,
            "doctor": doctor,
            "bench": bench,
        }
        scenarios[scenario](p)
    print(json.dumps(SEEN))


if __name__ == "__main__":
    main()

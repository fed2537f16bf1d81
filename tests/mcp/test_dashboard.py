"""The web dashboard of `toolshed serve`, end to end in a real headless Chromium (Debian's,
driven by Playwright for Python with the system browser: nothing is downloaded).

Signs in with the token, sees a plugin in `error` with its reason, disables and enables a
plugin and sees the state change (also when another process changes it), runs `calculator`
and a tool with an object argument from their generated forms, sees a call made by the
Python MCP client appear in Activity, approves a waiting call, answers a question a call
asks, cancels a task an MCP client started, stops a background process, and checks the weight of the first page (assets at most ~300 KB, no other origin). The
login link and the cookie session's CSRF rule are checked over plain HTTP.

Screenshots of every page (1280x800; the overview also dark and on a phone) go to the
test's temporary directory, or to the directory TOOLSHED_DASHBOARD_SCREENSHOTS names
(scripts/dashboard-screenshots makes docs/dashboard that way).
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp import Client
from playwright import sync_api as playwright
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from tasks_client import Created, Tasks

REPO = Path(__file__).resolve().parents[2]
SKILLFUL = REPO / "tests" / "fixtures" / "plugins" / "skillful"
CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium", shutil.which("chromium") or "") if p and os.path.exists(p)), None)
# The most bytes the first page may load (document, script, style, images), uncompressed.
PAGE_BUDGET = 300 * 1024



def request(url, method="GET", token=None, headers=None, body=None):
    """(status, headers, body) of one HTTP request; never raises for an HTTP status."""
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, method=method, headers=all_headers, data=data)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as res:
            return res.status, res.headers, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def audited(base, token):
    """How many calls the audit log holds."""
    status, _, body = request(f"{base}/api/v1/audit?limit=1000", token=token)
    assert status == 200, body
    return len(json.loads(body)["audit"])


def execute(base, token, tool, arguments):
    status, _, body = request(f"{base}/api/v1/tools/{tool}/execute", "POST", token, body={"arguments": arguments})
    assert status == 200, (status, body)
    return json.loads(body)


@pytest.fixture
def shots(tmp_path):
    where = Path(os.environ.get("TOOLSHED_DASHBOARD_SCREENSHOTS") or tmp_path / "shots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def snap(page, shots, name):
    """A screenshot of the page from its top."""
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(100)
    page.screenshot(path=str(shots / f"{name}.png"))


def broken_plugin(home):
    broken = home / "plugins" / "broken"
    broken.mkdir(parents=True)
    (broken / "plugin.toml").write_text(
        'id = "test.broken"\nversion = "0.1.0"\nname = "Broken"\ndescription = "Its entry file is missing."\n'
        'kind = "js"\nentry = "missing.js"\n'
    )


def needy_plugin(home):
    """A plugin that runs but whose tool needs a secret nobody has set."""
    needy = home / "plugins" / "needy"
    needy.mkdir(parents=True)
    (needy / "plugin.toml").write_text(
        'id = "test.needy"\nversion = "0.1.0"\nname = "Needy"\ndescription = "Needs an API token."\n'
        'kind = "js"\nentry = "main.js"\n\n[[tools]]\nname = "needy_ping"\ndescription = "Pings."\n\n'
        '[[config]]\nkey = "api_token"\ntype = "string"\nsecret = true\nrequired = true\n'
    )
    (needy / "main.js").write_text("exports.needy_ping = async () => 'pong';\n")


def agent_token(toolshed_bin, home, owner):
    made = subprocess.run([toolshed_bin, "token", "create", "--owner", owner], env={"TOOLSHED_HOME": str(home)},
                          capture_output=True, text=True, check=True, timeout=30)
    return made.stdout.strip()


def test_the_dashboard_in_a_real_browser(serve, home, workspace, toolshed_bin, shots):
    if not CHROMIUM:
        pytest.fail("Chromium is not installed; scripts/test installs it (apt-get install chromium)")
    broken_plugin(home)
    needy_plugin(home)
    shutil.copytree(SKILLFUL, home / "plugins" / "skillful")
    shutil.copytree(REPO / "tests" / "fixtures" / "plugins" / "agent-spaces-weather", home / "plugins" / "weather")
    (home / "policy.toml").write_text('[[policy.rule]]\ntools = ["random"]\ndecision = "ask"\n')
    url, token = serve({"TOOLSHED_CONFIG": str(home / "policy.toml")})
    base = url.rsplit("/mcp", 1)[0]
    # An agent's process, which the admin's dashboard must show and stop.
    alice = agent_token(toolshed_bin, home, "alice")
    started = execute(base, alice, "process_exec", {"cmd": "sleep 300", "name": "sleeper"})
    process_id = started["structured"]["id"]
    execute(base, token, "memory_store", {"text": "The staging database is on port 5433.", "tags": ["infra"]})

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] if os.geteuid() == 0 else [])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors, requests, sizes = [], [], {}
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))

        def sized(response):
            try:
                sizes[response.url] = len(response.body())
            except Exception:  # noqa: BLE001 - a redirect or an aborted stream has no body
                pass

        page.on("response", sized)

        # The first page: what it loads, and from where.
        page.goto(f"{base}/")
        page.wait_for_selector("#token")
        # A first visit is just the form: no "sign in again" before anyone signed in.
        assert page.locator(".login .reason").count() == 0, page.locator(".login").inner_text()
        assets = {u: n for u, n in sizes.items() if "/api/" not in u}
        assert sum(assets.values()) <= PAGE_BUDGET, assets
        assert all(u.startswith(base) or u.startswith("data:") for u in requests), requests

        # Sign in with the token.
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_selector("text=Calls in the last minute")
        assert page.evaluate("sessionStorage.getItem('toolshed.token')") == token
        assert page.evaluate("localStorage.length") == 0
        assert token not in page.url
        # The pictures: calls per minute (the calls made above), who is busy (alice, whose
        # process was started through REST), memory over time.
        page.wait_for_selector("#chart-calls svg rect")
        page.wait_for_selector('#chart-owners li[data-name="alice"]')
        assert page.locator("#chart-memory svg polyline, #chart-memory svg circle").count() >= 1
        assert "resident now" in page.locator("#chart-memory").inner_text()
        assert page.locator("[id^=chart-latency-] svg").count() >= 1
        snap(page, shots, "overview")
        page.emulate_media(color_scheme="dark")
        page.wait_for_timeout(200)
        snap(page, shots, "overview-dark")
        page.emulate_media(color_scheme="light")

        # A plugin in error, with its reason; a plugin disabled and enabled.
        page.goto(f"{base}/#/plugins")
        broken = page.locator('tr[data-plugin="test.broken"]')
        broken.wait_for()
        assert "error" in broken.inner_text() and "missing.js" in broken.inner_text(), broken.inner_text()
        row = page.locator('tr[data-plugin="test.skillful"]')
        assert "running" in row.inner_text()
        # Running, but its tool cannot work until its secret is set: not a green "running".
        needy = page.locator('tr[data-plugin="test.needy"]')
        assert needy.locator(".s-needs-setup").count() == 1, needy.inner_text()
        assert needy.locator(".s-running").count() == 0 and "api_token" in needy.inner_text(), needy.inner_text()
        # Tags and the runtime beside each plugin (failed before: neither was shown).
        weather = page.locator('tr[data-plugin="spaces.weather"]')
        assert "weather" in weather.locator(".tag").all_inner_texts(), weather.inner_text()
        assert "quickjs" in weather.inner_text(), weather.inner_text()
        row.locator('button[data-action="disable"]').click()
        page.wait_for_selector('tr[data-plugin="test.skillful"] .s-disabled')
        page.locator('tr[data-plugin="test.skillful"] button[data-action="enable"]').click()
        page.wait_for_selector('tr[data-plugin="test.skillful"] .s-running')
        # Paused and resumed from the page.
        page.locator('tr[data-plugin="test.skillful"] button[data-action="pause"]').click()
        page.wait_for_selector('tr[data-plugin="test.skillful"] .s-paused')
        page.locator('tr[data-plugin="test.skillful"] button[data-action="resume"]').click()
        page.wait_for_selector('tr[data-plugin="test.skillful"] .s-running')
        snap(page, shots, "plugins")
        # Changed by another process: the page follows without being reloaded.
        subprocess.run([toolshed_bin, "plugins", "disable", "test.skillful"],
                       env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
                       check=True, capture_output=True, timeout=60)
        page.wait_for_selector('tr[data-plugin="test.skillful"] .s-disabled', timeout=10_000)
        page.locator('tr[data-plugin="test.skillful"] button[data-action="enable"]').click()
        page.wait_for_selector('tr[data-plugin="test.skillful"] .s-running')

        # The run forms: calculator, and a tool whose argument is an object.
        page.goto(f"{base}/#/tools/calculator")
        page.fill("#arg-expression", "6 * 7")
        page.click("#run-form button[type=submit]")
        page.wait_for_selector(".result-text")
        assert page.locator(".result-text").first.inner_text() == "42"
        # The operator groups by their labels, a group's description under the filter.
        assert "Utilities (util)" in page.inner_text("#tool-group")
        page.select_option("#tool-group", "util")
        assert "helpers" in page.inner_text("#tool-group-about")
        page.select_option("#tool-group", "")
        snap(page, shots, "tools")
        page.goto(f"{base}/#/tools/skillful_ping")
        page.fill("#arg-target-host", "db.internal")
        page.fill("#arg-target-port", "5433")
        page.click("#run-form button[type=submit]")
        page.wait_for_selector(".result-text")
        assert page.locator(".result-text").first.inner_text() == "pong to db.internal:5433"

        # A call from another client shows in Activity.
        page.goto(f"{base}/#/activity")
        page.wait_for_selector("table.audit")

        async def mcp_call():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                result = await client.call_tool("datetime", {"operation": "now"})
                return result.is_error, result.content

        # Playwright's sync API holds this thread's event loop: the client gets a thread.
        outcome = []
        caller = threading.Thread(target=lambda: outcome.append(asyncio.run(mcp_call())))
        caller.start()
        caller.join(timeout=60)
        assert outcome and not outcome[0][0], outcome
        called = time.monotonic()
        page.wait_for_selector('table.audit tr:has-text("datetime")', timeout=10_000)
        seen_after = time.monotonic() - called
        print(f"an MCP call appeared in Activity after {seen_after:.2f} s")
        snap(page, shots, "activity")

        # A call waiting for approval, approved from the page.
        answer = {}
        waiting = threading.Thread(target=lambda: answer.update(execute(base, token, "random", {"operation": "uuid"})))
        waiting.start()
        page.goto(f"{base}/#/approvals")
        page.wait_for_selector('tr[data-approval]:has-text("random")', timeout=15_000)
        snap(page, shots, "approvals")
        page.locator('tr[data-approval] button:has-text("Approve")').first.click()
        page.wait_for_selector('#toast:has-text("approved random")')
        waiting.join(timeout=30)
        assert answer and not answer["is_error"], answer

        # An agent's background process, seen and stopped by the admin from the page
        # (before, the page listed only the dashboard's own owner's).
        before = audited(base, token)
        page.goto(f"{base}/#/processes")
        row = page.locator(f'tr[data-running="{process_id}"][data-owner="alice"]')
        row.wait_for()
        assert "sleep 300" in row.inner_text(), row.inner_text()
        # Narrowed to another owner, it is not listed.
        page.fill("#running-owner", "bob")
        page.press("#running-owner", "Enter")
        page.wait_for_selector(f'tr[data-running="{process_id}"]', state="detached")
        page.fill("#running-owner", "")
        page.press("#running-owner", "Enter")
        row.wait_for()
        snap(page, shots, "processes")
        row.locator('button[data-action="stop"]').click()
        page.wait_for_selector(f'tr[data-running="{process_id}"] .s-exited', timeout=15_000)
        # Watching the page wrote no audit rows; the stop is the one call it made.
        page.wait_for_timeout(2500)
        assert audited(base, token) - before == 1, "the Processes page's reads were audited as calls"
        listed = execute(base, alice, "process_list", {})["structured"]["processes"]
        assert not next(p for p in listed if p["id"] == process_id)["running"]

        # A question a REST call asks (ask_user), answered from the page.
        asked = {}
        asking = threading.Thread(target=lambda: asked.update(
            execute(base, token, "ask_user", {"question": "Which region do I deploy to?"})))
        asking.start()
        page.goto(f"{base}/#/approvals")
        form = page.locator('form[data-question]:has-text("Which region")')
        form.wait_for(timeout=15_000)
        form.locator("input").first.fill("eu-west-3")
        form.locator('button[type=submit]').click()
        asking.join(timeout=30)
        assert asked and not asked["is_error"] and "eu-west-3" in json.dumps(asked), asked

        # Jobs: a call an MCP client started as a task and a REST job, on one page; the task
        # cancelled from it.
        async def start_task():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http), mode="auto",
                                    extensions=[Tasks()]) as client:
                created = await client.session.call_tool(
                    "exec_command", {"cmd": "sleep 46.5", "yield_ms": 60000}, allow_claimed=True)
                assert isinstance(created, Created), created
                return created.task_id

        tasks = []
        starter = threading.Thread(target=lambda: tasks.append(asyncio.run(start_task())))
        starter.start()
        starter.join(timeout=60)
        assert tasks, "the MCP client started no task"
        status, _, body = request(f"{base}/api/v1/tools/calculator/execute", "POST", token,
                                  body={"arguments": {"expression": "6*7"}, "async": True})
        assert status == 202, body
        rest_job = json.loads(body)["job"]["id"]
        page.goto(f"{base}/#/jobs")
        task_row = page.locator(f'tr[data-job="{tasks[0]}"]')
        task_row.wait_for(timeout=15_000)
        assert "exec_command" in task_row.inner_text() and "running" in task_row.inner_text(), task_row.inner_text()
        page.wait_for_selector(f'tr[data-job="{rest_job}"] .s-succeeded', timeout=15_000)
        assert "42" in page.locator(f'tr[data-job="{rest_job}"]').inner_text()
        snap(page, shots, "jobs")
        # Narrowed to an owner with no jobs, the list is empty; cleared, it is back.
        page.fill("#jobs-owner", "nobody")
        page.press("#jobs-owner", "Enter")
        page.wait_for_selector(f'tr[data-job="{tasks[0]}"]', state="detached")
        page.fill("#jobs-owner", "")
        page.press("#jobs-owner", "Enter")
        task_row.wait_for()
        task_row.locator('button[data-action="cancel"]').click()
        page.wait_for_selector(f'tr[data-job="{tasks[0]}"] .s-cancelled', timeout=15_000)

        before = audited(base, token)
        page.goto(f"{base}/#/memory")
        page.wait_for_selector("text=staging database")
        # A search shows each match's text, the matched words marked, and its score.
        page.fill("#memory-q", "staging")
        page.press("#memory-q", "Enter")
        hit = page.locator("tr[data-memory] .memory-text")
        hit.first.wait_for()
        assert "database is on port 5433" in hit.first.inner_text(), hit.first.inner_text()
        assert hit.first.locator("mark").first.inner_text().lower() == "staging"
        assert "score" in page.locator("tr[data-memory]").first.inner_text()
        snap(page, shots, "memory")
        # The dashboard's own reads of memories are not audited as calls.
        page.wait_for_timeout(1500)
        assert audited(base, token) == before, "the Memory page's reads were audited as calls"

        # Narrow screens: the pages still read.
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{base}/#/plugins")
        page.wait_for_selector('tr[data-plugin="test.broken"]')
        snap(page, shots, "plugins-phone")
        page.goto(f"{base}/#/")
        page.wait_for_selector("#chart-calls svg rect")
        # The charts fit a phone's width: nothing wider than the screen.
        assert page.evaluate("document.getElementById('charts').scrollWidth") <= 390
        snap(page, shots, "overview-phone")
        browser.close()
    assert not errors, errors


def test_login_links_cookies_csrf_and_foreign_origins(serve, home, toolshed_bin):
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    # Without a token or cookie: the page and its assets, nothing else.
    assert request(f"{base}/")[0] == 200
    assert request(f"{base}/api/v1/plugins")[0] == 401
    assert request(f"{base}/api/ui/session")[0] == 401
    # A foreign origin is refused even with the token; a foreign Host even for the page.
    assert request(f"{base}/api/v1/plugins", token=token, headers={"Origin": "https://evil.example"})[0] == 403
    assert request(f"{base}/", headers={"Host": "evil.example"})[0] == 403

    link = subprocess.run([toolshed_bin, "dashboard", "--url", base], env={"TOOLSHED_HOME": str(home)},
                          capture_output=True, text=True, check=True, timeout=30).stdout.split()[0]
    assert link.startswith(f"{base}/login?code=")
    status, headers, _ = request(link)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
    session = cookie.split(";")[0]
    # Used once only; a forged code never.
    assert request(link)[0] == 401
    assert request(link[:-4] + ("ffff" if not link.endswith("ffff") else "0000"))[0] == 401

    jar = {"Cookie": session}
    assert request(f"{base}/api/v1/plugins", headers=jar)[0] == 200
    # The cookie counts only on the API, from the server's own origin, never for a WebSocket:
    # a page on another local port, the MCP door and an upgrade get nothing from it.
    own = base.removeprefix("http://")
    assert request(f"{base}/api/v1/plugins", headers={**jar, "Origin": f"http://{own}"})[0] == 200
    assert request(f"{base}/api/v1/plugins", headers={**jar, "Origin": "http://127.0.0.1:1"})[0] == 401
    assert request(f"{base}/api/v1/events/ws", headers={**jar, "Upgrade": "websocket", "Connection": "Upgrade",
                                                       "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})[0] == 401
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    refused = request(f"{base}/mcp", "POST", headers={**jar, "Accept": "application/json, text/event-stream"}, body=initialize)
    assert refused[0] == 401, refused
    assert "Path=/api/" in cookie
    status, _, body = request(f"{base}/api/ui/session", headers=jar)
    csrf = json.loads(body)["csrf"]
    assert status == 200 and csrf
    # A state-changing request with the cookie needs the CSRF token.
    assert request(f"{base}/api/v1/plugins/system.random/disable", "POST", headers=jar)[0] == 403
    assert request(f"{base}/api/v1/plugins/system.random/disable", "POST", headers={**jar, "X-CSRF-Token": "nope"})[0] == 403
    assert request(f"{base}/api/v1/plugins/system.random/disable", "POST", headers={**jar, "X-CSRF-Token": csrf})[0] == 200
    assert request(f"{base}/api/v1/plugins/system.random/enable", "POST", headers={**jar, "X-CSRF-Token": csrf})[0] == 200
    # Signed out: the cookie no longer works.
    assert request(f"{base}/api/ui/logout", "POST", headers={**jar, "X-CSRF-Token": csrf})[0] == 204
    assert request(f"{base}/api/v1/plugins", headers=jar)[0] == 401


def test_the_agents_page_shows_todo_lists_and_schedules(serve, shots):
    if not CHROMIUM:
        pytest.fail("Chromium is not installed; scripts/test installs it (apt-get install chromium)")
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    execute(base, token, "todo_write", {"todos": [
        {"id": "1", "text": "read the logs", "status": "done"},
        {"id": "2", "text": "fix the retry", "status": "in_progress", "notes": "backoff too short"},
    ]})
    schedule = execute(base, token, "schedule_create", {
        "name": "weekday-check", "cron": "0 9 * * 1-5", "tz": "Europe/Berlin",
        "tool": "calculator", "arguments": {"expression": "1+1"}})["structured"]["id"]

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] if os.geteuid() == 0 else [])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/")
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_selector("text=Calls in the last minute")
        page.click("nav >> text=Agents")
        todos = page.locator("tr[data-todo]").first
        todos.wait_for()
        text = todos.inner_text()
        assert "read the logs" in text and "fix the retry" in text and "backoff too short" in text, text
        assert page.locator('li[data-status="in_progress"]').count() == 1
        row = page.locator(f'tr[data-schedule="{schedule}"]')
        row.wait_for()
        text = row.inner_text()
        assert "weekday-check" in text and "0 9 * * 1-5" in text and "Europe/Berlin" in text, text
        # A list written now appears without a reload.
        execute(base, token, "todo_write", {"list": "later", "todos": [{"id": "a", "text": "new item", "status": "pending"}]})
        page.wait_for_selector("text=new item", timeout=10_000)
        snap(page, shots, "agents")
        assert errors == [], errors
        browser.close()


def test_the_servers_page_shows_a_mounted_server_and_restarts_it(serve, home, workspace, toolshed_bin, shots):
    if not CHROMIUM:
        pytest.fail("Chromium is not installed; scripts/test installs it (apt-get install chromium)")
    (workspace / "desc.txt").write_text("Describes a topic.\n")
    server_py = Path(__file__).resolve().parent / "servers" / "changing.py"
    # A server that says something on stderr as it starts, as real ones do (its paths as
    # arguments of their own, so the sandbox lets it read them).
    said = ("import runpy, sys; print('changing: starting up', file=sys.stderr, flush=True); "
            "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "HOME": str(home),
           "PATH": os.environ["PATH"]}
    added = subprocess.run([toolshed_bin, "--workspace", str(workspace), "mcp", "add", "changing", "--eager",
                            "--", sys.executable, "-c", said, str(server_py), "desc.txt"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] if os.geteuid() == 0 else [])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/")
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_selector("text=Calls in the last minute")
        page.goto(f"{base}/#/servers")
        row = page.locator('tr[data-server="mcp.changing"]')
        row.wait_for()
        page.wait_for_selector('tr[data-server="mcp.changing"] .s-running', timeout=30_000)
        assert "changing.py" in row.inner_text(), row.inner_text()
        row.locator('button[data-action="restart"]').click()
        page.wait_for_selector('#toast:has-text("restarted mcp.changing")', timeout=30_000)
        page.wait_for_selector('tr[data-server="mcp.changing"] .s-running', timeout=30_000)
        page.locator('tr[data-server="mcp.changing"] a').click()
        detail = page.locator("#server-detail")
        detail.wait_for()
        page.wait_for_selector('#server-detail li:has-text("describe")', timeout=15_000)
        assert "changing: starting up" in page.locator("#server-stderr").inner_text()
        assert "tool definitions accepted" in detail.inner_text()
        snap(page, shots, "servers")
        browser.close()
    assert not errors, errors

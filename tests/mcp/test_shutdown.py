"""Shutting `toolshed serve` down for a rolling update: on SIGTERM it stops taking requests
(503, and /api/v1/health says `draining` so a load balancer stops sending any), lets the
calls already running finish within `[server] shutdown_grace_secs`, then cancels what is
left and exits."""

import json
import signal
import threading
import time
import urllib.error
import urllib.request


def request(url, method="GET", token=None, body=None, timeout=60):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, headers=headers, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def start_call(base, token, cmd):
    """Runs exec_command in a thread; returns the thread and where its answer lands."""
    answer = {}

    def call():
        try:
            answer["reply"] = request(f"{base}/api/v1/tools/exec_command/execute", "POST", token,
                                      {"arguments": {"cmd": cmd, "yield_ms": 60000, "timeout_ms": 120000}})
        except OSError as e:  # the connection closed under a cancelled call
            answer["error"] = str(e)

    thread = threading.Thread(target=call)
    thread.start()
    for _ in range(100):
        status, health = request(f"{base}/api/v1/health")
        if health["calls_in_flight"] >= 1:
            return thread, answer
        time.sleep(0.05)
    raise AssertionError("the call never started")


def test_a_running_call_finishes_while_new_requests_are_refused(serve):
    url, token = serve({"TOOLSHED_SERVER__SHUTDOWN_GRACE_SECS": "30"})
    base = url.rsplit("/mcp", 1)[0]
    proc = serve.procs[-1]
    thread, answer = start_call(base, token, "sleep 2; echo finished")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    status, health = request(f"{base}/api/v1/health")
    assert status == 503 and health["status"] == "draining", (status, health)
    # New work is refused; reads and the running call's own business go on.
    status, body = request(f"{base}/api/v1/tools/calculator/execute", "POST", token, {"arguments": {"expression": "1+1"}})
    assert status == 503 and body["error"]["kind"] == "unavailable", (status, body)
    assert request(f"{base}/api/v1/tools", token=token)[0] == 200
    thread.join(timeout=30)
    status, result = answer["reply"]
    assert status == 200 and not result["is_error"], result
    assert "finished" in result["content"][0]["text"]
    assert proc.wait(timeout=30) == 0


def test_a_call_longer_than_the_grace_period_is_cancelled_and_the_server_exits(serve):
    url, token = serve({"TOOLSHED_SERVER__SHUTDOWN_GRACE_SECS": "1"})
    base = url.rsplit("/mcp", 1)[0]
    proc = serve.procs[-1]
    thread, answer = start_call(base, token, "sleep 40; echo too-late")
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    # Well before the call would have ended by itself.
    assert time.monotonic() - signalled < 30
    thread.join(timeout=30)
    reply = answer.get("reply")
    assert reply is None or reply[0] != 200 or reply[1]["is_error"], reply


def test_a_job_stopped_by_the_shutdown_says_so_not_that_a_caller_cancelled_it(serve):
    url, token = serve({"TOOLSHED_SERVER__SHUTDOWN_GRACE_SECS": "1"})
    base = url.rsplit("/mcp", 1)[0]
    proc = serve.procs[-1]
    status, started = request(f"{base}/api/v1/tools/exec_command/execute", "POST", token,
                              {"arguments": {"cmd": "sleep 40", "yield_ms": 60000, "timeout_ms": 120000},
                               "async": True})
    assert status == 202, (status, started)
    job_id = started["job"]["id"]
    for _ in range(100):
        if request(f"{base}/api/v1/health")[1]["calls_in_flight"] >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    # The next server on the same data dir reads how the job ended.
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    status, job = request(f"{base}/api/v1/jobs/{job_id}", token=token)
    assert status == 200, (status, job)
    assert job["state"] == "cancelled", job
    message = job["error"]["message"]
    assert "shutting down" in message and "caller" in message, message
    assert "cancelled by the caller" not in message, message
    assert job["error"]["details"] == {"by": "shutdown"}, job

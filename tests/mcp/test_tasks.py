"""The Tasks extension (`io.modelcontextprotocol/tasks`): a `tools/call` of a client that
declared it and that runs past `[mcp] task_after_ms` becomes a task, whose id the client
gets at once; the client reads it with `tasks/get` — also from a new connection after it
went away — or stops it with `tasks/cancel`. A task is a job: `GET /api/v1/jobs` lists it,
and a REST job is read by `tasks/get`. Driven by the Python `mcp` client in the 2026-07-28
era, which declares the extension through a client extension written here."""

import asyncio
import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from tasks_client import ANY, TASKS, CancelTask, Created, Tasks, get, settled, text, until, update


def run(coro, timeout=90):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


async def slow_call(client, marker, seconds=2):
    """A command that outlives the task wait: the call comes back as a task."""
    created = await client.session.call_tool(
        "exec_command", {"cmd": f"sleep {seconds}; echo finished-{marker}", "yield_ms": 60000}, allow_claimed=True
    )
    assert isinstance(created, Created), created
    assert created.status == "working" and created.task_id.startswith("job-"), created
    # Kept however long it runs (ttlMs null), then for [jobs] retention_secs.
    assert created.poll_interval_ms == 500 and created.ttl_ms is None, created
    return created.task_id


def http_client(url, token):
    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})


def rest(base, token, path, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


async def check_task_lifecycle(client):
    assert client.protocol_version == "2026-07-28"
    # A quick call is answered as any call: no task for what ends within the wait.
    quick = await client.session.call_tool("exec_command", {"cmd": "echo quick"}, allow_claimed=True)
    assert isinstance(quick, types.CallToolResult) and "quick" in quick.content[0].text, quick
    task_id = await slow_call(client, "one")
    working = await get(client, task_id)
    assert working["status"] == "working" and working["resultType"] == "complete", working
    assert "result" not in working, working
    done = await settled(client, task_id)
    assert done["status"] == "completed", done
    assert "finished-one" in text(done["result"]), done
    assert done["result"]["structuredContent"]["exit_code"] == 0, done
    assert done["lastUpdatedAt"] >= done["createdAt"], done
    assert 3_600_000 <= done["ttlMs"] < 3_600_000 + 30_000, done


def test_a_long_call_becomes_a_task_over_stdio(server):
    async def main():
        async with Client(server(), mode="auto", extensions=[Tasks()]) as client:
            await check_task_lifecycle(client)

    run(main())


def test_a_long_call_becomes_a_task_over_http(serve):
    url, token = serve()

    async def main():
        async with http_client(url, token) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
                await check_task_lifecycle(client)

    run(main())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_without_the_extension_waits_for_the_answer(server, mode):
    """No task for a client that did not declare the extension, in either era: the call is
    answered when it ends, however long it takes."""

    async def main():
        async with Client(server(), mode=mode) as client:
            result = await client.call_tool("exec_command", {"cmd": "sleep 1.5; echo waited", "yield_ms": 60000})
            assert not result.is_error and "waited" in result.content[0].text, result
            with pytest.raises(MCPError) as refused:
                await get(client, "job-1")
            # The client must declare the extension to use its methods (-32021 in the
            # 2026-07-28 era; the session era declares capabilities once, at initialize).
            assert refused.value.error.code in (-32021,), refused.value.error

    run(main())


def test_a_task_outlives_its_connection_and_shows_as_a_job(serve):
    """Started, the client gone, fetched from a new connection; listed by GET /jobs; a REST
    job read with tasks/get, the other way round."""
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]

    async def start():
        async with http_client(url, token) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
                return await slow_call(client, "detached", seconds=3)

    async def fetch(task_id, job_id):
        async with http_client(url, token) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
                done = await settled(client, task_id)
                from_rest = await settled(client, job_id)
                return done, from_rest

    task_id = run(start())
    status, jobs = rest(base, token, "/api/v1/jobs")
    assert status == 200, jobs
    listed = [j for j in jobs["jobs"] if j["id"] == task_id]
    assert listed and listed[0]["tool"] == "exec_command" and listed[0]["state"] == "running", jobs
    status, started = rest(base, token, "/api/v1/tools/calculator/execute", "POST",
                           {"arguments": {"expression": "6*7"}, "async": True})
    assert status == 202, started
    done, from_rest = run(fetch(task_id, started["job"]["id"]))
    assert done["status"] == "completed" and "finished-detached" in text(done["result"]), done
    assert from_rest["status"] == "completed" and "42" in text(from_rest["result"]), from_rest
    status, job = rest(base, token, f"/api/v1/jobs/{task_id}")
    assert status == 200 and job["state"] == "succeeded", job
    assert "finished-detached" in json.dumps(job["result"]), job


def test_a_task_is_cancelled_and_its_process_tree_killed(server):
    marker = f"sleep 41.{os.getpid() % 1000}"

    async def main():
        async with Client(server(), mode="auto", extensions=[Tasks()]) as client:
            created = await client.session.call_tool(
                "exec_command", {"cmd": f"{marker}; echo never", "yield_ms": 60000}, allow_claimed=True
            )
            assert isinstance(created, Created), created
            assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
            request = CancelTask(params=types.CancelTaskRequestParams(task_id=created.task_id))
            ack = await client.session.send_request(request, ANY)
            assert ack == {"resultType": "complete"}, ack
            task = await settled(client, created.task_id)
            assert task["status"] == "cancelled", task
            assert "result" not in task and "error" not in task, task
            # Cancelling what has ended changes nothing, and says so by an empty ack.
            again = await client.session.send_request(request, ANY)
            assert again == {"resultType": "complete"}, again

    run(main())
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "the cancelled task's command still runs"
        time.sleep(0.1)


def test_task_ids_that_are_not_the_callers_are_unknown(serve, token_for):
    """Unknown ids and another agent's tasks are the same -32602; the methods the 2026
    revision removed answer -32601 and name what replaced them."""
    url, _ = serve()
    ada, bob = token_for("ada"), token_for("bob")

    async def as_agent(token, work):
        async with http_client(url, token) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
                return await work(client)

    async def start(client):
        return await slow_call(client, "ada", seconds=1.5)

    def peek(task_id):
        async def work(client):
            codes = []
            for tid in (task_id, "job-999999", "nonsense"):
                with pytest.raises(MCPError) as unknown:
                    await get(client, tid)
                codes.append(unknown.value.error.code)
            with pytest.raises(MCPError) as removed:
                await client.session.send_request(
                    types.Request(method="tasks/result", params={"taskId": task_id}), ANY)
            return codes, removed.value.error

        return work

    task_id = run(as_agent(ada, start))
    codes, removed = run(as_agent(bob, peek(task_id)))
    assert codes == [-32602, -32602, -32602], codes
    assert removed.code == -32601 and "tasks/get" in removed.message, removed

    async def own(client):
        return await settled(client, task_id)

    done = run(as_agent(ada, own))
    assert done["status"] == "completed" and "finished-ada" in text(done["result"]), done


def test_a_session_era_client_that_declares_the_extension_gets_tasks_too(toolshed_bin, home, workspace):
    """The extension is declared once, at initialize, by a session-era client: raw JSON-RPC
    lines, as no official client of that era speaks it."""
    proc = subprocess.Popen(
        [toolshed_bin, "--workspace", str(workspace), "mcp"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "PATH": os.environ["PATH"]},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )

    def ask(id, method, params):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            reply = json.loads(proc.stdout.readline())
            if reply.get("id") == id:
                return reply

    try:
        hello = ask(1, "initialize", {"protocolVersion": "2025-11-25", "clientInfo": {"name": "raw", "version": "1"},
                                      "capabilities": {"extensions": {TASKS: {}}}})
        assert TASKS in hello["result"]["capabilities"]["extensions"], hello
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        created = ask(2, "tools/call", {"name": "exec_command",
                                        "arguments": {"cmd": "sleep 1.5; echo session-era", "yield_ms": 60000}})
        assert created["result"]["resultType"] == "task", created
        task_id = created["result"]["taskId"]
        deadline = time.monotonic() + 30
        while (task := ask(3, "tasks/get", {"taskId": task_id})["result"])["status"] == "working":
            assert time.monotonic() < deadline, task
            time.sleep(0.3)
        assert task["status"] == "completed" and "session-era" in text(task["result"]), task
        # A tasks method without its taskId is the client's mistake, and named so.
        bad = ask(4, "tasks/get", {})
        assert bad["error"]["code"] == -32602 and "taskId" in bad["error"]["message"], bad
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


LATER = """
exports.activate = (context) => context.registerActions([
  { name: "later", description: "Work a while, then ask the person.",
    run: async (inputs, ctx) => {
      await new Promise((done) => setTimeout(done, 1500));
      const answer = await ctx.ask("Which branch?",
        { type: "object", properties: { choice: { type: "string", enum: ["main", "dev"] } }, required: ["choice"] });
      return "chose " + JSON.stringify(answer);
    } },
]);
"""


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_question_a_task_asks_is_answered_with_tasks_update(server, serve, toolshed_bin, workspace, home, tmp_path, transport):
    """A call that became a task asks later: `tasks/get` shows `input_required` with the
    question, `tasks/update` answers it, and the task completes with the answer."""
    source = tmp_path / "later"
    source.mkdir()
    (source / "plugin.json").write_text(json.dumps(
        {"id": "test.later", "version": "1.0.0", "name": "Later", "kind": "js"}))
    (source / "main.js").write_text(LATER)
    installed = subprocess.run([toolshed_bin, "--workspace", str(workspace), "plugins", "install", str(source)],
                               env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
                               capture_output=True, text=True, timeout=60)
    assert installed.returncode == 0, installed.stderr

    async def work(client):
        created = await client.session.call_tool("later_later", {}, allow_claimed=True)
        assert isinstance(created, Created), created
        asking = await until(client, created.task_id, "input_required")
        assert asking["status"] == "input_required", asking
        [(key, request)] = asking["inputRequests"].items()
        assert request["method"] == "elicitation/create", request
        assert request["params"]["message"] == "Which branch?", request
        assert request["params"]["requestedSchema"]["properties"]["choice"]["enum"] == ["main", "dev"], request
        # An answer for a key nothing waits for is left; the right one is taken.
        assert await update(client, created.task_id, {"nothing": {"action": "decline"}}) == {"resultType": "complete"}
        # An answer the question's schema does not take is refused, and the question waits.
        with pytest.raises(MCPError) as wrong:
            await update(client, created.task_id, {key: {"action": "accept", "content": {"choice": "prod"}}})
        assert wrong.value.error.code == -32602 and key in wrong.value.error.message, wrong.value.error
        assert (await get(client, created.task_id))["status"] == "input_required"
        await update(client, created.task_id, {key: {"action": "accept", "content": {"choice": "dev"}}})
        done = await settled(client, created.task_id)
        assert done["status"] == "completed" and '"choice":"dev"' in text(done["result"]).replace(" ", ""), done

    async def main():
        if transport == "stdio":
            async with Client(server(), mode="auto", extensions=[Tasks()]) as client:
                await work(client)
        else:
            url, token = serve()
            async with http_client(url, token) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
                    await work(client)

    run(main())


def test_a_task_of_a_toolshed_that_stopped_is_failed_when_read(server, serve, workspace):
    """A `toolshed mcp` killed while its task ran: a `toolshed serve` on the same data dir,
    running since before, reads the task as failed (its toolshed stopped) with a JSON-RPC
    error, not as working forever."""
    url, token = serve()

    async def start():
        async with Client(server(), mode="auto", extensions=[Tasks()]) as client:
            task_id = await slow_call(client, "orphan", seconds=30)
            # The process dies without shutting down (as a crash or a kill would).
            pid = int(subprocess.run(["pgrep", "-n", "-f", f"{workspace} mcp"], capture_output=True, text=True).stdout.split()[0])
            os.kill(pid, 9)
            return task_id

    task_id = run(start())

    async def read():
        async with http_client(url, token) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
                return await settled(client, task_id, within=10)

    task = run(read())
    assert task["status"] == "failed", task
    assert task["error"]["code"] == -32603 and "stopped" in task["error"]["message"], task


def test_stdio_tasks_end_with_their_toolshed_and_say_so(server, toolshed_bin, workspace, home):
    """`toolshed mcp` ends with its client: its running tasks are cancelled by the shutdown
    and recorded so (read from a later toolshed), their commands stopped."""
    marker = f"sleep 43.{os.getpid() % 1000}"

    async def start():
        async with Client(server(), mode="auto", extensions=[Tasks()]) as client:
            created = await client.session.call_tool(
                "exec_command", {"cmd": f"{marker}; echo never", "yield_ms": 60000}, allow_claimed=True)
            assert isinstance(created, Created), created
            return created.task_id

    task_id = run(start())

    async def read():
        async with Client(server(), mode="auto", extensions=[Tasks()]) as client:
            return await get(client, task_id)

    task = run(read())
    assert task["status"] == "cancelled", task
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode != 0

"""`agent_run` through the MCP door, against a scripted fake model: an OpenAI-compatible
`/v1/chat/completions` on loopback (`[llm] base_url`), or the client's own sampling with
tools. Each script plays fixed tool calls, so every run is deterministic; the tests read
what the model was sent back (the tools offered, the results and refusals it saw), the
files the subagent changed, and the audit tree of its calls."""

import asyncio
import json
import subprocess
import threading
import time
import urllib.request

import pytest
from mcp import Client, types

import loopback
from test_stdio import toolshed


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def calls(*pairs):
    """A turn in which the model calls these tools: (name, arguments) pairs."""
    return {"calls": list(pairs)}


def say(text):
    """A turn in which the model answers."""
    return {"text": text}


class ScriptedModel(loopback.Handler):
    """An OpenAI-compatible chat-completions endpoint that plays `script` turn by turn (the
    last turn again once it runs out) and keeps every request body in `seen`."""

    script = []
    seen = []
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with ScriptedModel.lock:
            ScriptedModel.seen.append(body)
            turn = ScriptedModel.script[min(len(ScriptedModel.seen), len(ScriptedModel.script)) - 1]
        message = {"role": "assistant", "content": turn.get("text")}
        if "calls" in turn:
            n = len(ScriptedModel.seen)
            message["tool_calls"] = [
                {"id": f"call_{n}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(turn["calls"])
            ]
        answer = {
            "model": "scripted-1",
            "choices": [{"message": message, "finish_reason": "tool_calls" if "calls" in turn else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
        }
        self.answer(200, "application/json", json.dumps(answer).encode())


@pytest.fixture
def model(home):
    """Starts the scripted model and writes a config naming it; yields a function that sets
    the script and returns the config path."""
    ScriptedModel.seen = []
    with loopback.serving(ScriptedModel) as address:
        def play(*script, extra=""):
            ScriptedModel.script = list(script)
            ScriptedModel.seen = []
            path = home / "agents.toml"
            path.write_text(f'[llm]\nbase_url = "http://{address}/v1"\nmodel = "scripted-1"\n{extra}')
            return path
        yield play


def params_with(server, config):
    params = server()
    params.env["TOOLSHED_CONFIG"] = str(config)
    return params


def tool_messages(body):
    return [m for m in body["messages"] if m["role"] == "tool"]


def audit(toolshed_bin, workspace, home, *args):
    out = toolshed(toolshed_bin, workspace, home, "audit", "--json", "--limit", "200", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["audit"]


def test_a_subagent_reads_two_files_edits_one_and_answers(server, model, workspace, home, toolshed_bin):
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    config = model(
        calls(("workspace_read", {"path": "a.txt"}), ("workspace_read", {"path": "b.txt"})),
        calls(("workspace_edit", {"path": "b.txt", "old_text": "beta", "new_text": "gamma"})),
        say("a.txt says alpha; b.txt now says gamma"),
    )

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            return await client.call_tool("agent_run", {"task": "Read a.txt and b.txt, then change beta to gamma."})

    result = run(main())
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["answer"] == "a.txt says alpha; b.txt now says gamma"
    assert out["stopped"] == "done" and out["steps"] == 3
    assert [(c["tool"], c["ok"]) for c in out["calls"]] == [
        ("workspace_read", True), ("workspace_read", True), ("workspace_edit", True)]
    assert (workspace / "b.txt").read_text() == "gamma\n"
    # The model was offered tools as functions, and read the results back.
    first, second, third = ScriptedModel.seen
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"workspace_read", "workspace_edit"} <= names
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][1] == {"role": "user", "content": "Read a.txt and b.txt, then change beta to gamma."}
    read_results = tool_messages(second)
    assert [m["tool_call_id"] for m in read_results] == ["call_1_0", "call_1_1"]
    assert "alpha" in read_results[0]["content"] and "beta" in read_results[1]["content"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "workspace_read"
    assert len(tool_messages(third)) == 3
    # The audit shows the tree: the run, and its three calls as a sub-owner with it as parent.
    [row] = audit(toolshed_bin, workspace, home, "--tool", "agent_run")
    owner = out["owner"]
    assert owner == f"{row['owner']}/agent-{row['call_id']}"
    children = audit(toolshed_bin, workspace, home, "--parent", row["call_id"])
    assert sorted((c["tool"], c["owner"], c["door"]) for c in children) == sorted([
        ("workspace_read", owner, "agent"), ("workspace_read", owner, "agent"),
        ("workspace_edit", owner, "agent")])


def test_a_subagent_runs_on_the_clients_own_model_through_sampling_with_tools(server, workspace):
    (workspace / "notes.txt").write_text("the answer is 42\n")
    asked = []

    async def sampling(context, params):
        asked.append(params)
        if len(asked) == 1:
            return types.CreateMessageResultWithTools(
                role="assistant", model="client-model", stop_reason="toolUse",
                content=[types.ToolUseContent(type="tool_use", id="t1", name="workspace_read",
                                              input={"path": "notes.txt"})],
            )
        return types.CreateMessageResultWithTools(
            role="assistant", model="client-model", stop_reason="endTurn",
            content=[types.TextContent(type="text", text="It is 42.")],
        )

    async def main():
        async with Client(
            server(), mode="legacy", sampling_callback=sampling,
            sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
        ) as client:
            return await client.call_tool("agent_run", {"task": "What does notes.txt say?", "tools": ["workspace_*"]})

    result = run(main())
    assert not result.is_error, result.content
    assert result.structured_content["answer"] == "It is 42."
    assert len(asked) == 2
    offered = {t.name for t in asked[0].tools}
    assert "workspace_read" in offered and all(n.startswith("workspace_") for n in offered), offered
    # The second turn carries the call and its result.
    replay = asked[1].messages
    assert replay[1].role == "assistant"
    last = replay[2].content if isinstance(replay[2].content, list) else [replay[2].content]
    assert last[0].type == "tool_result" and last[0].tool_use_id == "t1"
    assert "the answer is 42" in last[0].content[0].text


def test_a_call_outside_the_narrowed_catalog_is_refused_and_the_model_sees_why(server, model, workspace):
    config = model(
        calls(("workspace_write", {"path": "x.txt", "content": "nope"})),
        say("I could not write it"),
    )

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            return await client.call_tool("agent_run", {"task": "Write x.txt", "tools": ["workspace_read", "workspace_list"]})

    result = run(main())
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["calls"][0]["tool"] == "workspace_write" and not out["calls"][0]["ok"]
    assert not (workspace / "x.txt").exists()
    first, second = ScriptedModel.seen
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["workspace_list", "workspace_read"]
    [refusal] = tool_messages(second)
    assert "denied" in refusal["content"] and "not available to this caller" in refusal["content"], refusal


def test_a_step_that_needs_approval_waits_for_the_person(server, model, workspace, home, toolshed_bin):
    config = model(
        calls(("workspace_write", {"path": "approved.txt", "content": "yes\n"})),
        say("written"),
        extra='[[policy.rule]]\nname = "ask before writing"\ntools = ["workspace_write"]\ndecision = "ask"\n',
    )
    approved = []

    def approve():
        deadline = time.time() + 60
        while time.time() < deadline:
            listed = toolshed(toolshed_bin, workspace, home, "approvals", "list", "--config", str(config))
            for word in listed.stdout.split():
                if word.startswith("ap-"):
                    out = toolshed(toolshed_bin, workspace, home, "approvals", "approve", word, "--config", str(config))
                    approved.append((word, out.returncode, out.stdout + out.stderr))
                    return
            time.sleep(0.2)

    threading.Thread(target=approve, daemon=True).start()

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            return await client.call_tool("agent_run", {"task": "Write approved.txt"})

    result = run(main())
    assert approved and approved[0][1] == 0, approved
    assert not result.is_error, result.content
    assert result.structured_content["calls"][0]["ok"], result.structured_content
    assert (workspace / "approved.txt").read_text() == "yes\n"


def test_the_budget_stops_a_looping_script_with_what_it_had(server, model):
    config = model(calls(("calculator", {"expression": "1+1"})))

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            steps = await client.call_tool("agent_run", {"task": "loop", "max_steps": 3})
            tokens = await client.call_tool("agent_run", {"task": "loop", "max_tokens": 250})
            wall = await client.call_tool("agent_run", {"task": "loop", "timeout_ms": 1})
            return steps, tokens, wall

    steps, tokens, wall = run(main())
    assert not steps.is_error, steps.content
    assert steps.structured_content["stopped"] == "max_steps" and steps.structured_content["steps"] == 3
    assert len(steps.structured_content["calls"]) == 3
    assert "stopped because it used all 3 steps" in steps.content[0].text
    # 120 tokens a turn: the third turn would pass 250.
    assert tokens.structured_content["stopped"] == "max_tokens", tokens.structured_content
    assert tokens.structured_content["steps"] == 3
    assert wall.structured_content["stopped"] == "timeout", wall.structured_content


def test_a_turn_runs_at_most_64_calls(server, model):
    config = model(calls(*[("calculator", {"expression": f"{i}+1"}) for i in range(70)]), say("done"))

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            return await client.call_tool("agent_run", {"task": "many"})

    result = run(main())
    assert not result.is_error, result.content
    assert len(result.structured_content["calls"]) == 64
    results = tool_messages(ScriptedModel.seen[1])
    assert len(results) == 70
    assert all("not run: a turn runs at most 64" in m["content"] for m in results[64:])


def test_nesting_past_the_depth_limit_is_refused(server, model):
    config = model(
        calls(("agent_run", {"task": "go deeper"})),
        calls(("agent_run", {"task": "deeper still"})),
        say("inner gave up"),
        say("outer done"),
        extra="[orchestration]\nmax_depth = 2\n",
    )

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            return await client.call_tool("agent_run", {"task": "start"})

    result = run(main())
    assert not result.is_error, result.content
    assert result.structured_content["answer"] == "outer done"
    # The second level was not offered agent_run, called it anyway, and was refused.
    second_level = ScriptedModel.seen[1]
    assert "agent_run" not in {t["function"]["name"] for t in second_level["tools"]}
    [refusal] = tool_messages(ScriptedModel.seen[2])
    assert "max_depth" in refusal["content"] and "2 deep" in refusal["content"], refusal


def test_an_unusable_setup_is_named(server, model):
    config = model(say("never"))

    async def main():
        async with Client(server(), mode="legacy") as client:
            unconfigured = await client.call_tool("agent_run", {"task": "x"})
        async with Client(params_with(server, config), mode="legacy") as client:
            no_preset = await client.call_tool("agent_run", {"task": "x", "preset": "nobody"})
            too_many = await client.call_tool("agent_run", {"task": "x", "max_steps": 1000})
            bad_glob = await client.call_tool("agent_run", {"task": "x", "tools": ["danger:extreme"]})
        return unconfigured, no_preset, too_many, bad_glob

    unconfigured, no_preset, too_many, bad_glob = run(main())
    assert unconfigured.is_error and "[llm] base_url" in unconfigured.content[0].text
    assert no_preset.is_error and "no agent preset `nobody`" in no_preset.content[0].text
    assert too_many.is_error and "max_steps" in too_many.content[0].text
    assert bad_glob.is_error, bad_glob.content


def test_presets_from_the_config_are_listed_and_narrow_a_run(server, model):
    config = model(
        calls(("workspace_write", {"path": "x.txt", "content": "no"})),
        say("reviewed"),
        extra=(
            '[[agents]]\nname = "reviewer"\ndescription = "Reads code and reports problems; changes nothing."\n'
            'system = "You review code."\ntools = ["read_only"]\nmax_steps = 4\n'
        ),
    )

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            listed = await client.call_tool("agent_presets_list", {})
            ran = await client.call_tool("agent_run", {"task": "Review", "preset": "reviewer"})
            return listed, ran

    listed, ran = run(main())
    assert listed.structured_content["presets"] == [{
        "name": "reviewer", "description": "Reads code and reports problems; changes nothing.",
        "tools": ["read_only"], "profile": None, "model": None, "max_steps": 4, "source": "config",
    }]
    assert ran.structured_content["preset"] == "reviewer"
    first = ScriptedModel.seen[0]
    assert first["messages"][0] == {"role": "system", "content": "You review code."}
    assert "workspace_write" not in {t["function"]["name"] for t in first["tools"]}
    assert not ran.structured_content["calls"][0]["ok"]


def test_cancelling_a_run_cancels_its_calls(serve, model, workspace, home, toolshed_bin):
    marker = workspace / "started"
    config = model(
        calls(("exec_command", {"cmd": f"touch {marker} && sleep 60", "yield_ms": 120000})),
        say("never reached"),
        extra="[sandbox]\nmode = \"full-access\"\n",
    )
    url, token = serve({"TOOLSHED_CONFIG": str(config)})
    api = url.rsplit("/mcp", 1)[0] + "/api/v1"

    def request(method, path, body=None):
        req = urllib.request.Request(api + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"authorization": f"Bearer {token}", "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    job = request("POST", "/tools/agent_run/execute", {"arguments": {"task": "run a long command"}, "async": True})["job"]
    deadline = time.time() + 60
    while not marker.exists():
        assert time.time() < deadline, "the subagent's command never started"
        time.sleep(0.1)
    request("POST", f"/jobs/{job['id']}/cancel")
    while True:
        state = request("GET", f"/jobs/{job['id']}")
        if state["state"] != "running":
            break
        assert time.time() < deadline
        time.sleep(0.1)
    # The command the subagent ran is gone with it.
    while subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True).returncode == 0:
        assert time.time() < deadline, "the subagent's command outlived its cancelled run"
        time.sleep(0.1)
    rows = audit(toolshed_bin, workspace, home, "--tool", "exec_command")
    assert rows and rows[0]["owner"].split("/")[-1].startswith("agent-"), rows
    assert rows[0]["outcome"] != "ok", rows[0]


def test_a_plugin_offers_presets_in_its_manifest(server, model, toolshed_bin, workspace, home, tmp_path):
    source = tmp_path / "triage"
    source.mkdir()
    (source / "plugin.toml").write_text(
        'id = "test.triage"\nversion = "1.0.0"\nname = "Triage"\nkind = "js"\nentry = "main.js"\n'
        '[[agents]]\nname = "triager"\ndescription = "Sorts new issues by area."\ntools = ["workspace_read"]\n'
    )
    (source / "main.js").write_text("exports.activate = (context) => context.registerActions([]);\n")
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source))
    assert installed.returncode == 0, installed.stderr
    config = model(say("sorted"))

    async def main():
        async with Client(params_with(server, config), mode="legacy") as client:
            listed = await client.call_tool("agent_presets_list", {})
            ran = await client.call_tool("agent_run", {"task": "triage", "preset": "triager"})
            return listed, ran

    listed, ran = run(main())
    [preset] = listed.structured_content["presets"]
    assert preset["name"] == "triager" and preset["source"] == "plugin test.triage", preset
    assert not ran.is_error, ran.content
    assert [t["function"]["name"] for t in ScriptedModel.seen[0]["tools"]] == ["workspace_read"]


class SlowModel(ScriptedModel):
    """The scripted model, answering after a second."""

    def do_POST(self):
        time.sleep(1)
        super().do_POST()


def test_runs_at_once_are_bounded_per_owner(server, home):
    ScriptedModel.script, ScriptedModel.seen = [say("done")], []
    with loopback.serving(SlowModel) as address:
        config = home / "slow.toml"
        config.write_text(f'[llm]\nbase_url = "http://{address}/v1"\n[orchestration]\nmax_running_per_owner = 1\n')

        async def main():
            async with Client(params_with(server, config), mode="legacy") as client:
                return await asyncio.gather(
                    client.call_tool("agent_run", {"task": "one"}),
                    client.call_tool("agent_run", {"task": "two"}),
                )

        results = run(main())
    refused = [r for r in results if r.is_error]
    assert len(refused) == 1, [r.content for r in results]
    assert "max_running_per_owner = 1" in refused[0].content[0].text
    assert not [r for r in results if not r.is_error][0].is_error


def test_a_rule_on_the_caller_holds_for_its_subagents(server, model, token_for, workspace):
    config = model(
        calls(("workspace_write", {"path": "blocked.txt", "content": "no"})),
        say("could not"),
        extra='[[policy.rule]]\nname = "alice writes nothing"\nowners = ["alice"]\ntools = ["workspace_write"]\ndecision = "deny"\n',
    )
    params = params_with(server, config)
    params.env["TOOLSHED_TOKEN"] = token_for("alice")

    async def main():
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("agent_run", {"task": "write"})

    result = run(main())
    assert not result.is_error, result.content
    [call] = result.structured_content["calls"]
    assert not call["ok"] and "alice writes nothing" in call["error"], call
    assert not (workspace / "blocked.txt").exists()


def test_the_results_of_one_turn_go_back_to_the_clients_model_in_one_message(server, workspace):
    (workspace / "a.txt").write_text("A\n")
    asked = []

    async def sampling(context, params):
        asked.append(params)
        if len(asked) == 1:
            return types.CreateMessageResultWithTools(
                role="assistant", model="m", stop_reason="toolUse",
                content=[types.ToolUseContent(type="tool_use", id="r1", name="workspace_read", input={"path": "a.txt"}),
                         types.ToolUseContent(type="tool_use", id="r2", name="calculator", input={"expression": "2+2"})],
            )
        return types.CreateMessageResultWithTools(role="assistant", model="m", stop_reason="endTurn",
                                                  content=[types.TextContent(type="text", text="ok")])

    async def main():
        async with Client(server(), mode="legacy", sampling_callback=sampling,
                          sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability())) as client:
            return await client.call_tool("agent_run", {"task": "two at once"})

    result = run(main())
    assert not result.is_error, result.content
    replay = asked[1].messages
    assert [m.role for m in replay] == ["user", "assistant", "user"], replay
    blocks = replay[2].content if isinstance(replay[2].content, list) else [replay[2].content]
    assert [(b.type, b.tool_use_id) for b in blocks] == [("tool_result", "r1"), ("tool_result", "r2")]

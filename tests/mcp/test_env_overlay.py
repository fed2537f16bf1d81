"""The workspace's .env files under the process environment: commands see `.env` <
`.env.toolshed` < the environment toolshed runs in; secret-looking names still stay out
of commands; a plugin's env contract is met by them once the user's config trusts the
workspace (an agent can write these files); `config show` and `doctor` name each
variable's source and never a value."""

import asyncio
import json
import os
import subprocess

from mcp import Client

SECRET = "sk-dotenv-canary-0042"

PLUGIN = {
    "id": "test.envneeds",
    "version": "1.0.0",
    "name": "Needs env",
    "kind": "js",
    "env": [{"name": "NOTES_DIR", "required": True}],
}


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def cli(toolshed_bin, workspace, home, *args, extra=None):
    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"), **(extra or {}))
    return subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), *args],
        env=env, capture_output=True, text=True, timeout=30,
    )


def test_dotenv_files_layer_under_the_process_environment(server, toolshed_bin, workspace, home, tmp_path):
    (workspace / ".env").write_text(
        f"GREETING=from-dotenv\nSHARED=base\nexport NOTES_DIR='notes dir'\nAPI_TOKEN={SECRET}\n"
    )
    (workspace / ".env.toolshed").write_text('SHARED="from toolshed"\nOVERRIDDEN=file\n')

    source = tmp_path / "envneeds"
    source.mkdir()
    (source / "plugin.json").write_text(json.dumps(PLUGIN))
    (source / "main.js").write_text(
        'export function activate(c) { c.registerActions([{ name: "ping", description: "Ping.", run: () => "pong" }]); }\n'
    )
    assert cli(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0

    # Untrusted, toolshed itself does not read the files: the contract is unmet.
    listed = json.loads(cli(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)["plugins"]
    plugin = next(p for p in listed if p["id"] == "test.envneeds")
    assert plugin["state"] != "running" and "NOTES_DIR" in (plugin["reason"] or ""), plugin

    # The user's own config trusts the workspace.
    (home / "user.toml").write_text(f'trusted_workspaces = ["{workspace}"]\n')
    trust = {"TOOLSHED_CONFIG": str(home / "user.toml")}
    params = server()
    params.env.update(trust)
    params.env["OVERRIDDEN"] = "process"

    async def main():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool(
                "exec_command", {"cmd": 'echo "$GREETING|$SHARED|$NOTES_DIR|$OVERRIDDEN|[$API_TOKEN]"'}
            )
            assert not result.is_error, result.content
            assert "from-dotenv|from toolshed|notes dir|process|[]" in result.content[0].text, result.content
            # NOTES_DIR from .env meets the plugin's env contract: its tool is there.
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "envneeds_ping" in tools, sorted(tools)
            pong = await client.call_tool("envneeds_ping", {})
            assert not pong.is_error, pong.content

    run(main())

    listed = json.loads(cli(toolshed_bin, workspace, home, "plugins", "list", "--json", extra=trust).stdout)["plugins"]
    plugin = next(p for p in listed if p["id"] == "test.envneeds")
    assert plugin["state"] == "running", plugin

    shown = cli(toolshed_bin, workspace, home, "config", "show", "--json", extra={"OVERRIDDEN": "process", **trust})
    assert shown.returncode == 0, shown.stderr
    sources = {e["name"]: e for e in json.loads(shown.stdout)["env"]}
    assert sources["SHARED"]["source"].endswith(".env.toolshed")
    assert sources["SHARED"]["overridden"][0].endswith("/.env")
    assert sources["OVERRIDDEN"]["source"] == "process"
    assert sources["API_TOKEN"]["source"].endswith("/.env")
    for args in (("config", "show"), ("config", "show", "--json"), ("doctor",), ("doctor", "--json")):
        out = cli(toolshed_bin, workspace, home, *args)
        assert SECRET not in out.stdout + out.stderr, args
        assert "from-dotenv" not in out.stdout, args
    doctor = cli(toolshed_bin, workspace, home, "doctor").stdout
    assert "API_TOKEN (.env)" in doctor and "NOTES_DIR (.env)" in doctor, doctor
    assert "the workspace is not trusted" in doctor, doctor


def test_a_broken_line_is_reported_with_its_place_and_the_rest_still_applies(server, toolshed_bin, workspace, home):
    (workspace / ".env").write_text("GOOD=yes\nthis is not a line\nALSO=fine\n")

    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("exec_command", {"cmd": "echo $GOOD-$ALSO"})
            assert "yes-fine" in result.content[0].text, result.content

    run(main())
    doctor = cli(toolshed_bin, workspace, home, "doctor").stdout
    assert ".env:2: not NAME=value" in doctor, doctor

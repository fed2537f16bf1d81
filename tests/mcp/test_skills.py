"""Skills through the Python MCP client: a fixture skill with a script, kept in the
workspace's .claude/skills, is listed, loaded, its script run with exec_command, and
offered in prompts/list and prompts/get."""

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "skills" / "csv-rows"


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_skill_is_listed_loaded_run_and_offered_as_a_prompt(server, workspace, mode):
    # `auto` speaks the 2026-07-28 era, where a prompts/get reply without `resultType` was
    # refused by the client (issue 54).
    shutil.copytree(FIXTURE, workspace / ".claude" / "skills" / "csv-rows")
    broken = workspace / ".claude" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter here\n")
    (workspace / "data.csv").write_text("name,age\nada,36\nalan,41\n")

    async def main():
        async with Client(server(), mode=mode) as client:
            assert mode == "legacy" or client.protocol_version == "2026-07-28", client.protocol_version
            listed = await client.call_tool("skill_list", {})
            assert not listed.is_error, listed.content
            skills = listed.structured_content["skills"]
            # The workspace's, then the three shipped with toolshed.
            assert [s["name"] for s in skills if s["source"] != "toolshed"] == ["csv-rows"], skills
            shipped = sorted(s["name"] for s in skills if s["source"] == "toolshed")
            assert shipped == ["toolshed-code-mode", "toolshed-plugins", "toolshed-sandbox"], skills
            assert skills[0]["description"].startswith("Count the data rows")
            assert any("broken/SKILL.md" in p and "front matter" in p for p in listed.structured_content["problems"])

            loaded = await client.call_tool("skill_load", {"name": "csv-rows"})
            assert not loaded.is_error, loaded.content
            got = loaded.structured_content
            assert got["files"] == ["SKILL.md", "scripts/count.sh"]
            assert got["workspace_dir"] == ".claude/skills/csv-rows" and got["reachable"] is True
            assert "bash .claude/skills/csv-rows/scripts/count.sh data.csv" in got["body"]

            ran = await client.call_tool("exec_command", {"cmd": "bash .claude/skills/csv-rows/scripts/count.sh data.csv"})
            assert not ran.is_error, ran.content
            assert "rows: 2" in ran.content[0].text

            missing = await client.call_tool("skill_load", {"name": "csv-row"})
            assert missing.is_error and "did you mean csv-rows" in missing.content[0].text

            prompts = (await client.list_prompts()).prompts
            commands = {"status", "approvals", "approve", "deny"}
            assert [p.name for p in prompts if not p.name.startswith("toolshed-") and p.name not in commands] == ["csv-rows"]
            assert "toolshed-sandbox" in [p.name for p in prompts]
            shipped = await client.call_tool("skill_load", {"name": "toolshed-code-mode"})
            assert not shipped.is_error and "tools.workspace_read" in shipped.structured_content["body"]
            prompt = await client.get_prompt("csv-rows", {})
            assert "count.sh" in prompt.messages[0].content.text

    run(main())


PLUGIN = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "plugins" / "skillful"


def test_a_running_plugins_skills_folder_is_listed_and_goes_with_the_plugin(server, toolshed_bin, home, workspace):
    shutil.copytree(PLUGIN, home / "plugins" / "skillful")

    async def main():
        async with Client(server(), mode="legacy") as client:
            listed = await client.call_tool("skill_list", {})
            assert not listed.is_error, listed.content
            skills = {s["name"]: s for s in listed.structured_content["skills"]}
            assert skills["release-notes"]["source"] == "plugin:test.skillful", skills
            loaded = await client.call_tool("skill_load", {"name": "release-notes"})
            assert "git log --oneline" in loaded.structured_content["body"]
            assert "release-notes" in [p.name for p in (await client.list_prompts()).prompts]

            disabled = subprocess.run(
                [toolshed_bin, "--workspace", str(workspace), "plugins", "disable", "test.skillful"],
                env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
                capture_output=True, text=True, timeout=60,
            )
            assert disabled.returncode == 0, disabled.stderr
            for _ in range(50):
                listed = await client.call_tool("skill_list", {})
                if "release-notes" not in [s["name"] for s in listed.structured_content["skills"]]:
                    break
                await asyncio.sleep(0.2)
            else:
                raise AssertionError(f"a disabled plugin's skill is still listed: {listed.structured_content}")

    run(main())

"""docs/seeds.md stays true: every tool, command and endpoint it names exists in this build."""

import json
import re
import subprocess
from pathlib import Path

from test_approvals import request

DOC = Path(__file__).resolve().parents[2] / "docs" / "seeds.md"


def named(kind):
    text = DOC.read_text()
    return sorted(set(re.findall(r"`" + kind + r":([^`]+)`", text)))


def test_every_tool_command_and_endpoint_named_in_seeds_md_exists(toolshed_bin, workspace, home, serve):
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    listed = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "plugins", "list", "--json"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    tools = {t for p in json.loads(listed.stdout)["plugins"] for t in p["tools"]}
    missing = [t for t in named("tool") if t not in tools]
    assert not missing, f"docs/seeds.md names tools this build lacks: {missing}"

    for words in named("cli"):
        done = subprocess.run(
            [toolshed_bin, *words.split(), "--help"], env=env, capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0, f"`toolshed {words} --help` failed: {done.stderr}"

    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    status, document = request(f"{base}/api/v1/openapi.json", token)
    assert status == 200
    paths = {(m.upper(), p.removeprefix("/api/v1")) for p, ops in document["paths"].items() for m in ops}
    for endpoint in named("rest"):
        method, path = endpoint.split(" ", 1)
        assert (method, path) in paths, f"docs/seeds.md names {endpoint}, which is not in openapi.json"
    proto = (DOC.parents[1] / "proto" / "toolshed" / "v1" / "plugin_manager.proto").read_text()
    for method in named("grpc"):
        assert re.search(r"\brpc " + method + r"\(", proto), f"docs/seeds.md names gRPC {method}, which the service lacks"
    assert named("grpc")
    assert len(named("tool")) > 25 and len(named("cli")) > 10 and len(named("rest")) > 10

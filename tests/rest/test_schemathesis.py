"""schemathesis against the REST API's own /api/v1/openapi.json, on a real `toolshed serve`."""

import os
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).parent


def test_schemathesis_finds_no_failures(toolshed_bin, tmp_path):
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TOOLSHED_HOME": str(home),
        "TOOLSHED_CURATED_DIR": str(tmp_path / "no-curated"),
        # schemathesis sends wrong tokens on purpose, many times; the per-address limit
        # would answer 429 to everything after the tenth.
        "TOOLSHED_SERVER__MAX_AUTH_FAILURES": "1000000",
    }
    token = subprocess.run(
        [toolshed_bin, "token"], env=env, capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()
    server = subprocess.Popen(
        [toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = None
        for line in server.stderr:
            if line.startswith("listening on "):
                base = line.split(" ", 2)[2].strip().removesuffix("/mcp")
                break
        assert base, "toolshed serve exited before listening"
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        st = Path(sys.executable).parent / "st"
        run = subprocess.run(
            [
                str(st),
                "--config-file",
                str(HERE / "schemathesis.toml"),
                "run",
                f"{base}/api/v1/openapi.json",
                "-H",
                f"Authorization: Bearer {token}",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env=dict(os.environ, SCHEMATHESIS_HOOKS=""),
            # schemathesis keeps a cache in its working directory: not in the repository.
            cwd=str(tmp_path),
        )
        assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

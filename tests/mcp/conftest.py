"""Shared fixtures for driving `toolshed mcp` with the Python MCP client.

The binary is never built here: `scripts/test` builds it and points TOOLSHED_BIN at it.
"""

import os
import subprocess
import threading
from pathlib import Path

import pytest
from mcp import StdioServerParameters


@pytest.fixture(scope="session")
def toolshed_bin() -> str:
    path = os.environ.get("TOOLSHED_BIN")
    if not path:
        pytest.fail("TOOLSHED_BIN is not set; run these tests through scripts/test")
    if not Path(path).is_file():
        pytest.fail(f"TOOLSHED_BIN={path} does not exist; build it with `cargo build -p toolshed-cli`")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private TOOLSHED_HOME for one test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with one file in it."""
    path = tmp_path / "workspace"
    path.mkdir()
    (path / "hello.txt").write_text("hello from the workspace\n")
    return path


@pytest.fixture
def server(toolshed_bin: str, home: Path, workspace: Path):
    """Parameters that start `toolshed mcp` on the test's workspace with extra flags."""

    def make(*flags: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=toolshed_bin,
            args=["--workspace", str(workspace), "mcp", *flags],
            env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
            cwd=str(workspace),
        )

    return make


@pytest.fixture
def token_for(toolshed_bin, home):
    """Makes an agent token for `owner` (`toolshed token create --owner`)."""

    def make(owner):
        out = subprocess.run(
            [toolshed_bin, "token", "create", "--owner", owner],
            env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
        )
        return out.stdout.strip()

    return make


@pytest.fixture
def serve(toolshed_bin: str, home: Path, workspace: Path):
    """Starts `toolshed serve --port 0` on the test's workspace when called (after the test
    has written its config; `extra_env` adds variables such as `TOOLSHED_SANDBOX__NETWORK`);
    returns (MCP URL, token). Every server it started is stopped
    at the end of the test."""
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    procs = []

    def start(extra_env=None):
        token = subprocess.run(
            [toolshed_bin, "token"], env=env, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
        proc = subprocess.Popen(
            [toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0"],
            env={**env, **(extra_env or {})},
            cwd=str(workspace),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("listening on "):
                # Keep reading stderr so the server never blocks on a full pipe.
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                return line.split(" ", 2)[2].strip(), token
        pytest.fail(f"toolshed serve exited before listening: {''.join(seen)}")

    start.procs = procs
    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


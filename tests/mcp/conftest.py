"""Shared fixtures for driving `toolshed mcp` with the Python MCP client.

The binary is never built here: `scripts/test` builds it and points TOOLSHED_BIN at it.
"""

import os
from pathlib import Path

import pytest
from mcp import StdioServerParameters


@pytest.fixture(scope="session")
def toolshed_bin() -> str:
    path = os.environ.get("TOOLSHED_BIN")
    if not path:
        pytest.fail("TOOLSHED_BIN is not set; run these tests through scripts/test")
    if not Path(path).is_file():
        pytest.fail(f"TOOLSHED_BIN={path} does not exist; build it with `cargo build -p toolshed`")
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

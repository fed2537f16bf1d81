"""Fixtures for the REST tests: the binary comes from scripts/test (TOOLSHED_BIN)."""

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def toolshed_bin() -> str:
    path = os.environ.get("TOOLSHED_BIN")
    if not path:
        pytest.fail("TOOLSHED_BIN is not set; run these tests through scripts/test")
    if not Path(path).is_file():
        pytest.fail(f"TOOLSHED_BIN={path} does not exist; build it with `cargo build -p toolshed-cli`")
    return path

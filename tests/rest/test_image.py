"""The OCI image the project ships, built and run here: `scripts/image` makes it without a
base image (no registry is reachable) from the binaries, their libraries and a static
busybox, and podman runs it (runc, vfs storage, no daemon). Inside it `/health` answers, the
Python MCP client calls a tool over HTTP, and `exec_command` runs in the command sandbox with
every layer enforced — given the three security options docs/sandbox.md names.

scripts/test installs podman, runc and busybox-static and runs this; where podman is
missing it fails (TOOLSHED_REQUIRE_IMAGE) or skips."""

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

REPO = Path(__file__).resolve().parents[2]
if not shutil.which("podman"):
    if os.environ.get("TOOLSHED_REQUIRE_IMAGE"):
        raise RuntimeError("TOOLSHED_REQUIRE_IMAGE is set but podman is not installed (apt-get install podman runc busybox-static)")
    pytest.skip("podman is not installed", allow_module_level=True)

# No daemon, no cgroup v2 delegation, no overlay: what runs on these machines.
PODMAN = ["podman", "--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
# What the command sandbox needs of a container (docs/sandbox.md, "In a container"), and
# limits the runtime may set under this machine's own.
RUN_OPTIONS = ["--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
               "--security-opt", "unmask=ALL", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]


# How a `baseline` pod rendered with `render.py --command-sandbox` runs (docs/deploy.md,
# "Commands in a pod"), as podman can grant it: a user namespace of its own (hostUsers:
# false), every capability dropped, no new privileges, a read-only root, inside a pod's
# environment. A `restricted` pod has the runtime's default seccomp and masked /proc paths.
POD = ["--uidmap", "0:300000:65536", "--gidmap", "0:300000:65536", "--cap-drop", "ALL",
       "--security-opt", "no-new-privileges", "--read-only", "--ulimit", "nofile=1024:1024",
       "--ulimit", "nproc=4096:4096", "-e", "KUBERNETES_SERVICE_HOST=10.96.0.1"]
BASELINE = ["--security-opt", "unmask=ALL",
            "--security-opt", f"seccomp={REPO / 'deploy' / 'kubernetes' / 'seccomp' / 'toolshed.json'}"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    tag = f"localhost/toolshed:test-{os.getpid()}"
    out = tmp_path_factory.mktemp("image") / "toolshed.oci.tar"
    built = subprocess.run([str(REPO / "scripts" / "image"), "--debug", "--tag", tag, "--out", str(out)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    assert out.stat().st_size > 1 << 20
    yield tag
    subprocess.run([*PODMAN, "rmi", "-f", tag], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def served(image, tmp_path_factory):
    """The image serving on a free port, its workspace and data dir mounted from here."""
    root = tmp_path_factory.mktemp("served")
    workspace, data = root / "workspace", root / "data"
    for d in (workspace, data):
        d.mkdir()
        # The image runs as uid 1000: its volumes must be writable by it.
        if os.geteuid() == 0:
            os.chown(d, 1000, 1000)
        else:
            d.chmod(0o777)
    port = free_port()
    name = f"toolshed-test-{os.getpid()}"
    started = subprocess.run(
        [*PODMAN, "run", "-d", "--name", name, "--network", "host", *RUN_OPTIONS,
         "-v", f"{workspace}:/workspace", "-v", f"{data}:/data",
         image, "serve", "--bind", "127.0.0.1", "--port", str(port)],
        capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as reply:
                    assert reply.read() == b'{"status":"ok"}'
                    break
            except OSError:
                assert time.monotonic() < deadline, subprocess.run(
                    [*PODMAN, "logs", name], capture_output=True, text=True).stdout
                time.sleep(0.2)
        yield {"name": name, "base": base, "workspace": workspace, "data": data}
    finally:
        subprocess.run([*PODMAN, "rm", "-f", name], capture_output=True, timeout=120)


def test_the_image_serves_health_mcp_and_a_sandboxed_command(served):
    name, base, workspace = served["name"], served["base"], served["workspace"]
    token = (served["data"] / "token").read_text().strip()

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as client:
            calc = await client.call_tool("calculator", {"expression": "6*7"})
            assert not calc.is_error and calc.content[0].text == "42", calc.content
            ran = await client.call_tool("exec_command", {"cmd": "echo made-in-the-image > out.txt; id -u; cat out.txt"})
            assert not ran.is_error, ran.content
            return ran

    ran = asyncio.run(asyncio.wait_for(main(), 120))
    assert ran.content[0].text.splitlines()[:2] == ["1000", "made-in-the-image"], ran.content
    sandbox = ran.structured_content["sandbox"]
    assert sandbox["mode"] == "workspace-write", sandbox
    for layer in ("user-namespace", "mount-namespace", "seccomp", "no-new-privs"):
        assert layer in sandbox["enforced"], sandbox
    assert any(e.startswith("landlock") for e in sandbox["enforced"]), sandbox
    # The file the command wrote is in the mounted workspace, owned by the image's user.
    assert (workspace / "out.txt").read_text() == "made-in-the-image\n"
    assert (workspace / "out.txt").stat().st_uid == 1000
    # `toolshed sandbox check` inside says the same.
    checked = subprocess.run([*PODMAN, "exec", name, "toolshed", "sandbox", "check"],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and "a sandboxed `true` ran" in checked.stdout, checked.stdout + checked.stderr


def test_a_podman_workspace_runs_the_tools_in_the_running_container(served, toolshed_bin, tmp_path):
    """`--workspace podman://CONTAINER/path` from this machine: the tools run through
    `podman exec -i` by the worker inside the container, commands in its sandbox there."""
    name, workspace = served["name"], served["workspace"]
    (workspace / "notes.txt").write_text("kept in the container's workspace\n")
    # This machine's podman needs its storage and runtime named on every call.
    runtime = tmp_path / "podman"
    runtime.write_text("#!/bin/sh\nexec " + " ".join(PODMAN) + ' "$@"\n')
    runtime.chmod(0o755)
    config = tmp_path / "toolshed.toml"
    config.write_text(f'[workspace]\nruntime = "{runtime}"\n')
    url = f"podman://{name}/workspace"

    def call(tool, args):
        return subprocess.run(
            [toolshed_bin, "--data-dir", str(tmp_path / "data"), "--config", str(config),
             "--workspace", url, "call", tool, "--args", json.dumps(args)],
            capture_output=True, text=True, timeout=120)

    read = call("workspace_read", {"path": "notes.txt"})
    assert read.returncode == 0 and "kept in the container's workspace" in read.stdout, read.stdout + read.stderr
    ran = call("exec_command", {"cmd": "id -u; cat /etc/os-release 2>/dev/null | head -1; printf made > by-exec.txt"})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1000" in ran.stdout.splitlines(), ran.stdout
    assert (workspace / "by-exec.txt").read_text() == "made"
    # The worker's own sandbox holds inside the container (it allows user namespaces here).
    checked = subprocess.run(
        [toolshed_bin, "--data-dir", str(tmp_path / "data"), "--config", str(config),
         "--workspace", url, "sandbox", "check"], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    enforced = checked.stdout.split("enforced: ")[1]
    assert "user-namespace" in enforced and "landlock" in enforced, checked.stdout
    # Out of the workspace is refused there as here.
    escaped = call("workspace_read", {"path": "../etc/passwd"})
    assert escaped.returncode != 0 and "root:" not in escaped.stdout, escaped.stdout + escaped.stderr
    # A container that is not running: podman's own words, with the workspace named.
    missing = subprocess.run(
        [toolshed_bin, "--data-dir", str(tmp_path / "data"), "--config", str(config),
         "--workspace", f"podman://no-such-{os.getpid()}/workspace", "call", "workspace_list", "--args", "{}"],
        capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0
    assert f"no-such-{os.getpid()}" in missing.stderr + missing.stdout, missing.stderr


def test_the_sandbox_runs_in_the_supported_pod_and_a_restricted_one_says_what_it_lacks(image):
    def run(*args):
        return subprocess.run([*PODMAN, "run", "--rm", *POD, *args], capture_output=True, text=True, timeout=300)

    granted = run(*BASELINE, image, "sandbox", "check")
    assert granted.returncode == 0 and "a sandboxed `true` ran" in granted.stdout, granted.stdout + granted.stderr
    enforced = granted.stdout.split("enforced: ")[1]
    for layer in ("user-namespace", "mount-namespace", "pid-namespace", "seccomp", "no-new-privs", "landlock"):
        assert layer in enforced, granted.stdout
    # A restricted pod: the sandbox cannot be built, commands are refused, and both commands
    # say what the pod lacks.
    restricted = run(image, "sandbox", "check")
    assert restricted.returncode != 0, restricted.stdout
    assert "FAIL" in restricted.stdout and "hostUsers: false" in restricted.stdout, restricted.stdout
    assert "render.py --command-sandbox" in restricted.stdout, restricted.stdout
    doctor = run(image, "doctor")
    pod_lines = [line for line in doctor.stdout.splitlines() if "Kubernetes pod" in line]
    assert pod_lines and "procMount: Unmasked" in pod_lines[0], doctor.stdout
    # Outside a pod doctor does not speak of one.
    plain = subprocess.run([*PODMAN, "run", "--rm", *[a for a in POD if "KUBERNETES" not in a and a != "-e"],
                            image, "doctor"], capture_output=True, text=True, timeout=300)
    assert "Kubernetes pod" not in plain.stdout, plain.stdout

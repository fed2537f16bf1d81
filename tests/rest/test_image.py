"""The OCI image the project ships, built and run here: `scripts/image` makes it without a
base image (no registry is reachable) from the binaries, their libraries and a static
busybox, and podman runs it (runc, vfs storage, no daemon). Inside it `/health` answers, the
Python MCP client calls a tool over HTTP, and `exec_command` runs in the command sandbox with
every layer enforced — given the three security options docs/sandbox.md names.

scripts/test installs podman, runc and busybox-static and runs this; where podman is
missing it fails (TOOLSHED_REQUIRE_IMAGE) or skips."""

import asyncio
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


def test_the_image_serves_health_mcp_and_a_sandboxed_command(image, tmp_path):
    workspace, data = tmp_path / "workspace", tmp_path / "data"
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
        token = (data / "token").read_text().strip()

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
    finally:
        subprocess.run([*PODMAN, "rm", "-f", name], capture_output=True, timeout=120)

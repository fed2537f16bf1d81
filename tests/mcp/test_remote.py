"""A workspace on another machine over SSH, driven through the MCP door with the official
Python client: a real OpenSSH server (Debian's sshd) on a loopback port, run as a
non-root user with a test key, and `toolshed --workspace ssh://...` against it.

Run as root (as CI is), the server runs as the user `toolshed-ci` (scripts/test makes
it); run as anyone else, as that user.
"""

import asyncio
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from test_exec import free_port, running, wait_gone

SSHD = "/usr/sbin/sshd"
CI_USER = "toolshed-ci"


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], check=True, capture_output=True, text=True)
    return out.stdout.split()[1]


class Sshd:
    """An OpenSSH server on 127.0.0.1 as a non-root user, and a workspace of that user."""

    def __init__(self):
        if not Path(SSHD).exists():
            pytest.fail("sshd is missing: scripts/test installs Debian's openssh-server")
        self.user = CI_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        try:
            entry = pwd.getpwnam(self.user)
        except KeyError:
            pytest.fail(f"the user {self.user} is missing: scripts/test makes it (useradd -m {self.user})")
        self.dir = Path(tempfile.mkdtemp(prefix="toolshed-sshd-"))
        self.dir.chmod(0o755)
        self.port = free_port()
        keygen(self.dir / "hostkey")
        keygen(self.dir / "clientkey")
        shutil.copy(self.dir / "clientkey.pub", self.dir / "authorized_keys")
        self.workspace = self.dir / "remote-ws"
        self.workspace.mkdir()
        (self.dir / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.dir}/hostkey\n"
            f"AuthorizedKeysFile {self.dir}/authorized_keys\nPidFile none\nUsePAM no\n"
            "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"PubkeyAuthentication yes\nAllowUsers {self.user}\nMaxSessions 50\nMaxStartups 50\n"
        )
        for name in ["hostkey", "authorized_keys", "sshd_config", "remote-ws"]:
            os.chown(self.dir / name, entry.pw_uid, entry.pw_gid)
        command = [SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config")]
        if os.geteuid() == 0:
            command = ["su", self.user, "-s", "/bin/sh", "-c", " ".join(command)]
        self.log = open(self.dir / "sshd.log", "wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail(f"sshd did not start: {(self.dir / 'sshd.log').read_text()}")

    def url(self, path: str = "") -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{self.workspace}{path}"

    def put(self, name: str, text: str) -> Path:
        """A file in the remote workspace, owned by the server's user."""
        path = self.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        entry = pwd.getpwnam(self.user)
        for owned in [path, *path.relative_to(self.workspace).parents]:
            os.chown(self.workspace / owned, entry.pw_uid, entry.pw_gid)
        return path

    def stop(self):
        # `su` leaves sshd in a process group of its own: it is found by its config file.
        subprocess.run(["pkill", "-f", f"{self.dir}/sshd_config"], check=False)
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=10)
        self.log.close()
        # Sessions outlive the listener: end them (and the workers they run).
        subprocess.run(["pkill", "-f", f"worker --root {self.workspace}"], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def sshd():
    server = Sshd()
    yield server
    server.stop()


class Local:
    """This side: toolshed's home, its config for the remote workspace, and how to run it."""

    def __init__(self, toolshed_bin: str, home: Path, sshd: Sshd, extra: str = ""):
        self.bin = toolshed_bin
        self.home = home
        self.sshd = sshd
        self.config = home / "remote.toml"
        self.config.write_text(
            f'[workspace]\nworker = "{toolshed_bin}"\nidentity = "{sshd.dir}/clientkey"\n' + extra
        )
        self.env = {
            "TOOLSHED_HOME": str(home),
            "HOME": str(home / "user"),
            "PATH": os.environ["PATH"],
            "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
        }

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [self.bin, "--config", str(self.config), *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    def trust(self):
        return self.cli("ssh", "trust", self.sshd.url())

    def mcp(self, *flags: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=self.bin,
            args=["--config", str(self.config), "--workspace", self.sshd.url(), "mcp", *flags],
            env=self.env,
            cwd=str(self.home),
        )


@pytest.fixture
def local(toolshed_bin, home, sshd):
    return Local(toolshed_bin, home, sshd)


def test_an_mcp_session_works_on_an_ssh_workspace(local, sshd):
    local.trust()
    sshd.put("notes/plan.md", "alpha\nbeta\ngamma\n")
    marker = f"sleep 51.{os.getpid() % 1000}"

    async def main():
        async with Client(local.mcp(), mode="legacy") as client:
            read = await client.call_tool("workspace_read", {"path": "notes/plan.md"})
            assert not read.is_error, read.content
            assert "beta" in read.content[0].text

            edited = await client.call_tool(
                "workspace_edit", {"path": "notes/plan.md", "old_text": "beta", "new_text": "BETA"}
            )
            assert not edited.is_error, edited.content
            assert (sshd.workspace / "notes/plan.md").read_text() == "alpha\nBETA\ngamma\n"

            piped = await client.call_tool("exec_command", {"cmd": "cat notes/plan.md | sort -r | head -n 1; whoami"})
            assert not piped.is_error, piped.content
            assert piped.content[0].text.splitlines()[:2] == ["gamma", sshd.user], piped.content[0].text
            assert piped.structured_content["exit_code"] == 0

            grep = await client.call_tool("workspace_grep", {"pattern": "BET"})
            assert not grep.is_error, grep.content
            assert "notes/plan.md" in grep.content[0].text

            # A background process with a grandchild in a session of its own: stopped, the
            # whole tree goes.
            started = await client.call_tool("process_exec", {"cmd": f"setsid {marker} & {marker}"})
            assert not started.is_error, started.content
            pid = started.structured_content["id"]
            for _ in range(100):
                if running(marker):
                    break
                await asyncio.sleep(0.05)
            assert running(marker)
            stopped = await client.call_tool("process_stop", {"id": pid})
            assert not stopped.is_error, stopped.content
            assert await asyncio.to_thread(wait_gone, marker), "the stopped process's tree survived"

    run(main())


def test_an_unknown_host_is_refused_until_trusted(local, sshd):
    result = local.cli("--workspace", sshd.url(), "call", "workspace_list", "--args", "{}", check=False)
    assert result.returncode != 0
    assert "is not known" in result.stderr and "toolshed ssh trust" in result.stderr, result.stderr
    trusted = local.trust()
    assert fingerprint(sshd.dir / "hostkey.pub") in trusted.stdout, trusted.stdout
    listed = local.cli("--workspace", sshd.url(), "call", "workspace_list", "--args", "{}")
    assert "remote-ws" in listed.stdout or listed.returncode == 0


def test_a_changed_host_key_is_refused_with_the_offered_fingerprint(local, sshd):
    # toolshed trusts another key for this host and port: what a server whose key changed
    # (or a machine in the middle) looks like.
    other = local.home / "otherkey"
    keygen(other)
    kind, key = (other.with_suffix(".pub")).read_text().split()[:2]
    ssh_dir = local.home / "ssh"
    ssh_dir.mkdir(exist_ok=True)
    (ssh_dir / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {kind} {key}\n")
    result = local.cli("--workspace", sshd.url(), "call", "workspace_list", "--args", "{}", check=False)
    assert result.returncode != 0
    offered = fingerprint(sshd.dir / "hostkey.pub")
    assert "has changed" in result.stderr and offered in result.stderr, result.stderr
    assert "--replace" in result.stderr
    # Trusting again without --replace is refused too; with it, the host is reached.
    again = local.cli("ssh", "trust", sshd.url(), check=False)
    assert again.returncode != 0 and "--replace" in again.stderr, again.stderr
    local.cli("ssh", "trust", sshd.url(), "--replace")
    local.cli("--workspace", sshd.url(), "call", "workspace_list", "--args", "{}")


def test_paths_out_of_the_remote_workspace_are_refused(local, sshd):
    local.trust()
    sshd.put("inside.txt", "inside\n")
    link = sshd.workspace / "out"
    if not link.is_symlink():
        link.symlink_to("/etc")

    async def main():
        async with Client(local.mcp(), mode="legacy") as client:
            for path in ["../../etc/passwd", "out/passwd", "/etc/passwd"]:
                result = await client.call_tool("workspace_read", {"path": path})
                assert result.is_error, (path, result.content)
                assert "outside the workspace" in result.content[0].text, result.content[0].text
            written = await client.call_tool("workspace_write", {"path": "out/evil", "content": "x"})
            assert written.is_error
            assert not Path("/etc/evil").exists()
            ok = await client.call_tool("workspace_read", {"path": "inside.txt"})
            assert not ok.is_error

    run(main())
    # The URL itself may not climb out either.
    bad = local.cli("--workspace", sshd.url("/../.."), "call", "workspace_list", "--args", "{}", check=False)
    assert bad.returncode == 2 and "`..`" in bad.stderr, bad.stderr


def ssh_processes(marker: str) -> list[int]:
    """This side's ssh processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
            continue
        if cmdline and cmdline[0].endswith(b"ssh") and any(marker.encode() in part for part in cmdline):
            found.append(int(entry.name))
    return found


def test_a_connection_dropped_mid_write_leaves_the_old_file_or_the_new(local, sshd):
    local.trust()
    old = "old\n" * 1000
    target = sshd.put("big.txt", old)
    new = "N" * (12 << 20)

    async def main():
        async with Client(local.mcp(), mode="legacy") as client:
            for delay in [0.05, 0.2, 0.5]:
                # Read before writing (the edit guard), as a model would.
                for _ in range(50):
                    seen = await client.call_tool("workspace_read", {"path": "big.txt", "limit": 1})
                    if not seen.is_error:
                        break
                    await asyncio.sleep(0.2)
                assert not seen.is_error, seen.content
                write = asyncio.create_task(client.call_tool("workspace_write", {"path": "big.txt", "content": new}))
                await asyncio.sleep(delay)
                # Drop the connection: every ssh process of this toolshed (the master
                # connection too) is killed.
                for pid in ssh_processes(str(local.home)):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                result = await write
                text = target.read_text()
                assert text in (old, new), f"a torn file of {len(text)} bytes"
                if result.is_error:
                    assert "reach" in result.content[0].text or "connection" in result.content[0].text, result.content
                # Put the old content back for the next round.
                target.write_text(old)

    run(main(), timeout=300)


RELAY = r"""
import os, socket, sys, threading, time
host, port, flag, delay = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
s = socket.create_connection((host, port))
def slow():
    if os.path.exists(flag):
        time.sleep(delay)
def up():
    while True:
        data = os.read(0, 65536)
        if not data:
            s.shutdown(socket.SHUT_WR)
            return
        slow()
        s.sendall(data)
threading.Thread(target=up, daemon=True).start()
while True:
    data = s.recv(65536)
    if not data:
        break
    slow()
    os.write(1, data)
"""


def test_a_slow_remote_hits_the_call_deadline(toolshed_bin, home, sshd):
    relay = home / "relay.py"
    relay.write_text(RELAY)
    flag = home / "slow"
    proxy = f"ProxyCommand={sys.executable} {relay} %h %p {flag} 3"
    local = Local(
        toolshed_bin,
        home,
        sshd,
        f'ssh_options = ["-o", "{proxy}"]\n\n[limits]\ndefault_timeout_ms = 1500\nmax_timeout_ms = 1500\n',
    )
    local.trust()
    sshd.put("slow.txt", "slow\n")

    async def main():
        async with Client(local.mcp(), mode="legacy") as client:
            assert not (await client.call_tool("workspace_read", {"path": "slow.txt"})).is_error
            flag.write_text("on")
            started = time.monotonic()
            result = await client.call_tool("workspace_read", {"path": "slow.txt"})
            took = time.monotonic() - started
            assert result.is_error, result.content
            text = result.content[0].text
            assert "1500" in text or "timed out" in text or "deadline" in text, text
            # The remote's answer would take 6 s (3 s each way); the call ends at its
            # deadline, resolving the paths it touches for the policy included.
            assert took < 2.9, f"the call ended {took:.1f} s after it started: {text}"
            flag.unlink()
            # The link recovers once the latency goes: the late reply is dropped, calls go on.
            for _ in range(50):
                later = await client.call_tool("workspace_read", {"path": "slow.txt"})
                if not later.is_error:
                    break
                await asyncio.sleep(0.3)
            assert not later.is_error, later.content
            assert "slow" in later.content[0].text

    run(main())


FAKE_RUNTIME = """#!/bin/sh
# A container runtime stand-in (these machines run no container daemon): `exec -i
# CONTAINER CMD...` runs CMD here. The worker it starts is the real one.
[ "$1" = exec ] && [ "$2" = -i ] || { echo "only exec -i" >&2; exit 2; }
shift 3
exec "$@"
"""


def fake_runtime(home: Path) -> Path:
    runtime = home / "fake-docker"
    runtime.write_text(FAKE_RUNTIME)
    runtime.chmod(0o755)
    return runtime


def test_a_language_server_runs_where_the_workspace_is(toolshed_bin, home, tmp_path):
    """pyright on a container workspace: started through the worker, its stdio relayed
    over the connection, its answers about the files there."""
    pyright = Path(sys.executable).parent / "pyright-langserver"
    if not pyright.exists():
        pytest.fail(f"{pyright} is missing; scripts/test installs pyright into the tests' virtualenv")
    fixtures = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "lsp" / "python"
    inside = tmp_path / "inside"
    shutil.copytree(fixtures, inside)
    runtime = fake_runtime(home)
    config = home / "remote.toml"
    config.write_text(
        f'[workspace]\nruntime = "{runtime}"\nworker = "{toolshed_bin}"\n\n'
        f'[lsp]\nrequest_timeout_secs = 120\n\n[lsp.python]\ncommand = ["{pyright}", "--stdio"]\n'
    )
    params = StdioServerParameters(
        command=toolshed_bin,
        args=["--config", str(config), "--workspace", f"docker://box{inside}", "mcp"],
        env={"TOOLSHED_HOME": str(home), "HOME": str(home), "PATH": os.environ["PATH"],
             "TOOLSHED_CURATED_DIR": str(home / "none")},
        cwd=str(home),
    )

    async def main():
        async with Client(params, mode="legacy") as client:
            found = await client.call_tool("lsp", {"operation": "definition", "path": "main.py", "line": 5, "column": 21})
            assert not found.is_error, found.content
            first = found.structured_content["locations"][0]
            assert (first["path"], first["line"], first["column"]) == ("geometry.py", 1, 5), found.content
            hover = await client.call_tool("lsp", {"operation": "hover", "path": "main.py", "symbol": "circle_area", "line": 5})
            assert not hover.is_error, hover.content
            assert "(r: float) -> float" in hover.structured_content["hover"]

    run(main(), timeout=240)


def test_a_mounted_mcp_server_runs_where_the_workspace_is(toolshed_bin, home, tmp_path):
    """`toolshed mcp add` on a container workspace: the server starts there (a relative
    path in its arguments is the workspace's), its stdio relayed over the connection."""
    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "desc.txt").write_text("Describes a topic, from the container.\n")
    runtime = fake_runtime(home)
    config = home / "remote.toml"
    config.write_text(
        f'[workspace]\nruntime = "{runtime}"\nworker = "{toolshed_bin}"\n\n[sandbox]\nmode = "full-access"\n'
    )
    server_py = Path(__file__).resolve().parent / "servers" / "changing.py"
    env = {"TOOLSHED_HOME": str(home), "HOME": str(home), "PATH": os.environ["PATH"],
           "TOOLSHED_CURATED_DIR": str(home / "none")}
    base = [toolshed_bin, "--config", str(config), "--workspace", f"docker://box{inside}"]
    added = subprocess.run([*base, "mcp", "add", "changing", "--", sys.executable, str(server_py), "desc.txt"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    assert "changing__steady" in added.stdout + added.stderr
    params = StdioServerParameters(command=toolshed_bin, args=[*base[1:], "mcp"], env=env, cwd=str(home))

    async def main():
        async with Client(params, mode="legacy") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "from the container" in tools["changing__describe"].description
            result = await client.call_tool("changing__describe", {"topic": "boats"})
            assert not result.is_error, result.content
            assert result.content[0].text == "about boats"

    run(main())

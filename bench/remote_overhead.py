#!/usr/bin/env python3
"""What an ssh:// workspace costs per call against running the same thing over plain `ssh`
on the same host, side by side in one run.

A real OpenSSH server (Debian's sshd) on a loopback port, as a non-root user (as root:
`toolshed-ci`, which scripts/test makes), serves a workspace with a 4 KiB file and a tree
of 10,000 small files. Two clients, alternated round by round so they share the machine's
noise:

  toolshed   `toolshed --workspace ssh://... mcp`, one warm MCP stdio session, N calls of
             each kind, one in flight
  ssh        `ssh host COMMAND` over a warm master connection (ControlMaster, the fastest
             plain ssh gets), N runs of each

Rows: `workspace_read` of the 4 KiB file vs `ssh host cat FILE`; `exec_command true` vs
`ssh host true`; `workspace_grep` over the 10k-file tree vs `ssh host rg PATTERN DIR`.
Medians per call, in ms; overhead = toolshed - ssh (negative: toolshed is faster).

Usage: remote_overhead.py --toolshed BIN [--calls 50] [--rounds 5]
"""

import argparse
import json
import os
import pwd
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


class Session:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next:
                assert "error" not in reply, reply
                return reply["result"]

    def call(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), result
        return result

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolshed", required=True)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    user = "toolshed-ci" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    entry = pwd.getpwnam(user)
    root = Path(tempfile.mkdtemp(prefix="bench-ssh-"))
    root.chmod(0o755)
    for key in ["hostkey", "clientkey"]:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / key)], check=True)
    shutil.copy(root / "clientkey.pub", root / "authorized_keys")
    ws = root / "ws"
    (ws / "tree").mkdir(parents=True)
    (ws / "file.txt").write_text(("x" * 63 + "\n") * 64)
    for d in range(100):
        sub = ws / "tree" / f"d{d:03}"
        sub.mkdir()
        for f in range(100):
            (sub / f"f{f:03}.txt").write_text(f"line one of {d}/{f}\nneedle {d * 100 + f}\n" if f == 7 else f"plain {d}/{f}\n")
    port = free_port()
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/hostkey\nAuthorizedKeysFile {root}/authorized_keys\n"
        f"PidFile none\nUsePAM no\nStrictModes no\nPasswordAuthentication no\nAllowUsers {user}\nMaxSessions 100\n")
    for path in [root / "hostkey", root / "authorized_keys", root / "sshd_config", *[ws, *ws.rglob("*")]]:
        os.chown(path, entry.pw_uid, entry.pw_gid)
    command = [SSHD, "-D", "-f", str(root / "sshd_config")]
    if os.geteuid() == 0:
        command = ["su", user, "-s", "/bin/sh", "-c", " ".join(command)]
    sshd = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)

    home = root / "home"
    home.mkdir()
    config = home / "remote.toml"
    config.write_text(f'[workspace]\nworker = "{args.toolshed}"\nidentity = "{root}/clientkey"\n')
    env = {"TOOLSHED_HOME": str(home), "HOME": str(home), "PATH": os.environ["PATH"],
           "TOOLSHED_CURATED_DIR": str(home / "none")}
    url = f"ssh://{user}@127.0.0.1:{port}{ws}"
    subprocess.run([args.toolshed, "ssh", "trust", url], env=env, check=True, capture_output=True)

    control = root / "cm"
    ssh = ["ssh", "-T", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={home}/ssh/known_hosts",
           "-o", "StrictHostKeyChecking=yes", "-i", str(root / "clientkey"), "-o", "ControlMaster=auto",
           "-o", f"ControlPath={control}", "-o", "ControlPersist=60", "-p", str(port), f"{user}@127.0.0.1"]
    # The master connection, warm; it outlives this call, so it gets none of our output.
    subprocess.run([*ssh, "true"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    rows = {
        "read 4 KiB": (("workspace_read", {"path": "file.txt", "limit": 100}), f"cat {ws}/file.txt"),
        "exec true": (("exec_command", {"cmd": "true"}), "true"),
        "grep 10k files": (("workspace_grep", {"pattern": "needle 4207", "path": "tree"}),
                           f"rg -n 'needle 4207' {ws}/tree"),
    }
    samples = {name: {"toolshed": [], "ssh": []} for name in rows}
    session = Session([args.toolshed, "--config", str(config), "--workspace", url, "mcp"], env)
    for (tool, arguments), _ in rows.values():
        for _ in range(5):
            session.call(tool, arguments)
    for _ in range(args.rounds):
        for name, ((tool, arguments), remote) in rows.items():
            n = args.calls if "grep" not in name else max(5, args.calls // 5)
            start = time.perf_counter()
            for _ in range(n):
                session.call(tool, arguments)
            samples[name]["toolshed"].append((time.perf_counter() - start) * 1000 / n)
            start = time.perf_counter()
            for _ in range(n):
                subprocess.run([*ssh, remote], check=True, stdout=subprocess.DEVNULL)
            samples[name]["ssh"].append((time.perf_counter() - start) * 1000 / n)
    session.close()
    subprocess.run([*ssh, "-O", "exit"], capture_output=True)
    load = os.getloadavg()[0]
    print(f"load {load:.2f}; {args.rounds} rounds; ms per call (median of rounds)")
    print(f"{'row':16} {'toolshed':>9} {'ssh':>9} {'overhead':>9}")
    for name in rows:
        t = statistics.median(samples[name]["toolshed"])
        s = statistics.median(samples[name]["ssh"])
        print(f"{name:16} {t:9.3f} {s:9.3f} {t - s:+9.3f}")
    # `su` leaves sshd in a process group of its own: it is found by its config file.
    subprocess.run(["pkill", "-f", f"{root}/sshd_config"], check=False)
    os.killpg(sshd.pid, 15)
    subprocess.run(["pkill", "-f", f"worker --root {ws}"], check=False)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

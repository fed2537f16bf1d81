#!/usr/bin/env python3
"""Where a sandboxed spawn's time goes: runs the command sandbox's helper as toolshed does
(`sandbox-exec --mode workspace-write --network off`, joined to a network keeper's
namespaces like a host's commands, with the default hidden paths) with
TOOLSHED_SANDBOX_TIMINGS set, and prints the median of each stage beside a raw spawn of
the same program, interleaved.

Usage: bench/sandbox_stages.py [--helper target/release/toolshed-sandbox] [--rounds 300]
       [--program /usr/bin/true]
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

STAGES = [
    ("start", "exec of the helper, to its main"),
    ("parsed", "arguments, environment, descriptors"),
    ("namespaces", "unshare (mount, pid, ipc, uts; user and network joined)"),
    ("mounts", "private /tmp, /dev/shm, /run; workspace; hidden paths"),
    ("proc", "fork of the first process, its /proc"),
    ("landlock", "Landlock ruleset built"),
    ("seccomp", "seccomp filter compiled"),
    ("forked", "fork of the command"),
    ("caps", "capabilities dropped"),
    ("landlocked", "Landlock applied"),
    ("restricted", "seccomp applied, the environment set"),
    ("reaped", "exec of the program, its run, its reaping"),
    ("status", "status back to the helper"),
    ("end", "status back to the helper, the helper's exit, its reaping"),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--helper", default="target/release/toolshed-sandbox")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--program", default="/usr/bin/true")
    opts = parser.parse_args()
    helper = os.path.abspath(opts.helper)
    keeper = subprocess.Popen(
        [helper, "sandbox-net", "--network", "off"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert keeper.stdout.readline().strip() == b"ready"
    user = os.open(f"/proc/{keeper.pid}/ns/user", os.O_RDONLY)
    net = os.open(f"/proc/{keeper.pid}/ns/net", os.O_RDONLY)
    home = os.path.expanduser("~")
    hidden = [".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".gnupg",
              ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".config/toolshed"]
    with tempfile.TemporaryDirectory() as workspace, tempfile.TemporaryDirectory() as data:
        command = [helper, "sandbox-exec", "--mode", "workspace-write", "--network", "off",
                   "--workspace", workspace, "--tmp-bytes", str(1 << 30),
                   "--join", f"{user},{net}", "--deny", data,
                   "--deny", os.path.join(workspace, ".toolshed")]
        for path in hidden:
            command += ["--deny", os.path.join(home, path)]
        command += ["--", opts.program]
        env = dict(os.environ, TOOLSHED_SANDBOX_TIMINGS="1")
        raw, total = [], []
        stages = {name: [] for name, _ in STAGES}
        for _ in range(opts.rounds):
            began = time.monotonic_ns()
            subprocess.run([opts.program], cwd=workspace, check=True)
            raw.append(time.monotonic_ns() - began)
            began = time.monotonic_ns()
            done = subprocess.run(command, cwd=workspace, env=env, pass_fds=(user, net),
                                  stderr=subprocess.PIPE, check=True)
            ended = time.monotonic_ns()
            total.append(ended - began)
            marks = {}
            for line in done.stderr.decode().splitlines():
                parts = line.split()
                if len(parts) == 5 and parts[2] == "at":
                    marks[parts[3]] = int(parts[4])
            marks["end"] = ended
            previous = began
            for name, _ in STAGES:
                stages[name].append(marks[name] - previous)
                previous = marks[name]
    keeper.kill()
    keeper.wait()

    def ms(values):
        return statistics.median(values) / 1e6

    print(f"rounds: {opts.rounds}, program: {opts.program}, load: {os.getloadavg()[0]:.2f}")
    print(f"raw spawn of the program        {ms(raw):6.3f} ms")
    print(f"sandboxed spawn, whole          {ms(total):6.3f} ms  ({ms(total) - ms(raw):+.3f} ms)")
    for name, what in STAGES:
        print(f"  {name:<11} {ms(stages[name]):6.3f} ms  {what}")


if __name__ == "__main__":
    main()

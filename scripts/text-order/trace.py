#!/usr/bin/env python3
"""Runs a program and records which of its functions run, in the order they first run.

Usage: trace.py OUT -- PROGRAM [ARGS...]

The program is started under ptrace. Right after `execve`, a breakpoint (int3) is written
at the entry of every function of the executable (from its symbol table); the first time a
thread reaches one, the original byte is put back, the function's name is appended to OUT
and the thread goes on. Each function costs one stop, so a whole server session traces in
seconds. Standard input and output are the program's own: this script can stand in for
the program wherever a client starts it (an MCP client over stdio).

The program's threads are followed; processes it forks are not traced, so the workload
must not start commands (a forked child would meet the breakpoints untraced).
Linux x86_64 only. Used by scripts/text-order/generate.
"""

import ctypes
import os
import signal
import subprocess
import sys

PTRACE_TRACEME = 0
PTRACE_CONT = 7
PTRACE_GETREGS = 12
PTRACE_SETREGS = 13
PTRACE_SETOPTIONS = 0x4200
PTRACE_O_TRACECLONE = 0x8
PTRACE_O_EXITKILL = 0x100000
WALL = 0x40000000
INT3 = 0xCC


class Regs(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_ulonglong)
        for name in (
            "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax "
            "rip cs eflags rsp ss fs_base gs_base ds es fs gs"
        ).split()
    ]


libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(request, pid, addr=0, data=0):
    if libc.ptrace(request, pid, addr, data) == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"ptrace({request}, {pid}): {os.strerror(err)}")


def functions(binary):
    """(offset, name) of every function with a size, from the symbol table."""
    out = subprocess.run(
        ["nm", "-S", "--defined-only", binary], check=True, capture_output=True, text=True
    ).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            found.setdefault(int(parts[0], 16), parts[3])
    return found


def load_base(pid, binary):
    """Where the executable's first segment is mapped (its load bias for a PIE)."""
    real = os.path.realpath(binary)
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    raise SystemExit(f"trace.py: {binary} is not mapped in process {pid}")


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        raise SystemExit(__doc__)
    out_path, argv = sys.argv[1], sys.argv[3:]
    binary = argv[0]
    names = functions(binary)

    pid = os.fork()
    if pid == 0:
        ptrace(PTRACE_TRACEME, 0)
        os.execv(binary, argv)
    _, status = os.waitpid(pid, 0)  # stopped at execve
    if not os.WIFSTOPPED(status):
        raise SystemExit("trace.py: the program did not start")
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL)
    base = load_base(pid, binary)
    original = {}
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
        for offset in names:
            mem.seek(base + offset)
            original[base + offset] = mem.read(1)
            mem.seek(base + offset)
            mem.write(bytes([INT3]))

    order = []
    seen = set()
    regs = Regs()
    mem = open(f"/proc/{pid}/mem", "r+b", buffering=0)
    live = {pid}
    ptrace(PTRACE_CONT, pid, 0, 0)
    while live:
        try:
            tid, status = os.waitpid(-1, WALL)
        except ChildProcessError:
            break
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            live.discard(tid)
            continue
        if not os.WIFSTOPPED(status):
            continue
        live.add(tid)
        sig = os.WSTOPSIG(status)
        deliver = 0
        if sig == signal.SIGTRAP and status >> 16 == 0:
            ptrace(PTRACE_GETREGS, tid, 0, ctypes.addressof(regs))
            at = regs.rip - 1
            if at in original:
                if at not in seen:
                    seen.add(at)
                    order.append(names[at - base])
                    mem.seek(at)
                    mem.write(original[at])
                regs.rip = at
                ptrace(PTRACE_SETREGS, tid, 0, ctypes.addressof(regs))
            else:
                deliver = sig
        elif sig == signal.SIGTRAP or sig == signal.SIGSTOP:
            pass  # a clone event, or a new thread's first stop
        else:
            deliver = sig
        try:
            ptrace(PTRACE_CONT, tid, 0, deliver)
        except OSError:
            live.discard(tid)
    with open(out_path, "w") as out:
        out.write("\n".join(order) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Ops per 64-byte code window of the innermost loops of a binary's functions.

    python3 scripts/op_windows.py <binary> <regex over demangled names>
    python3 scripts/op_windows.py target/release/mosaic-bench-suite \\
        'libs::(mosaic|bevy)::JoinFilter'

Why: on the AMD EPYC (Zen 5) VM a loop runs about 1.5x slower when one
64-byte window of its code holds more than 12 ops (a compare or arithmetic
op fused with the conditional branch after it counts once): that window is
then decoded instead of read from the op cache
(`examples/loop_placement.rs` shows the step). Which window an op lands in
is the linker's doing, so the same source can be fast in one build and
slow in the next. This lists each innermost loop (a backward conditional
branch with no other one inside it) of the matching functions, where it
starts relative to a 64-byte boundary, and its ops per window, flagging
windows over 12, so a timing that moved between builds can be checked
against where the loop sits. x86-64 ELF binaries; needs `nm` and `objdump`.
"""

import re
import subprocess
import sys

FUSES = re.compile(r"(cmp|test|add|sub|inc|dec|and)")
WINDOW = 64
LIMIT = 12


def functions(binary, pattern):
    out = subprocess.run(
        ["nm", "-C", "-S", binary], capture_output=True, text=True, check=True
    ).stdout
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in "tT" and re.search(pattern, parts[3]):
            yield parts[3], int(parts[0], 16), int(parts[1], 16)


def instructions(binary, start, size):
    out = subprocess.run(
        [
            "objdump",
            "-d",
            "--no-show-raw-insn",
            f"--start-address={start:#x}",
            f"--stop-address={start + size:#x}",
            binary,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            found.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return found


def loops(insns):
    """(head, branch) of each backward conditional branch."""
    for addr, op, args in insns:
        if op.startswith("j") and op != "jmp":
            m = re.match(r"([0-9a-f]+)", args)
            if m and int(m.group(1), 16) < addr:
                yield int(m.group(1), 16), addr


def windows(insns, head, branch):
    """Ops per 64-byte window of the loop head..=branch, fused pairs once."""
    ops = {}
    prev = None
    for addr, op, _ in insns:
        if head <= addr <= branch:
            fused = op.startswith("j") and prev is not None and FUSES.match(prev)
            if not fused:
                ops[addr // WINDOW] = ops.get(addr // WINDOW, 0) + 1
            prev = op
    return [ops[w] for w in sorted(ops)]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, pattern = sys.argv[1], sys.argv[2]
    for name, start, size in functions(binary, pattern):
        insns = instructions(binary, start, size)
        found = list(loops(insns))
        for head, branch in found:
            inner = any(
                (h, b) != (head, branch) and head <= h and b <= branch for h, b in found
            )
            if inner:
                continue
            counts = windows(insns, head, branch)
            flag = "  <- over 12" if max(counts) > LIMIT else ""
            print(
                f"{name[:60]:60} loop at +{head % WINDOW:2} "
                f"({branch - head + 2:3} bytes): ops per window {counts}{flag}"
            )


if __name__ == "__main__":
    main()

"""Where the test suite's CPU time goes: pytest, run with its arguments, while every process
started on the machine is sampled from /proc; then CPU seconds per test module.

    .venv/bin/python scripts/suite_cpu.py -n 3 --dist loadfile --no-loadscope-reorder

``pytest --durations`` gives wall time, which on a busy machine counts the time a test waits
for a core; the suite's time on 2 cores is bounded by its CPU time instead (its sum over
2). A process is charged to the test named in the ``PYTEST_CURRENT_TEST`` it inherited (a
``kedro run`` a test started, its workers, a browser), else to its kind: the pytest
processes themselves (the in-process tests), Ray's daemons, other. A process that lives less
than one sampling interval (0.2 s) can be missed, and one that ends loses its last
interval; one still running when pytest ends is read once more then. Every process started
on the machine while it runs is counted: run it on an otherwise idle machine. Linux only.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time

INTERVAL_S = 0.2
SETTLED_S = 1.0
"""A process's command line and environment are read until it is this old: a forked child
shows its parent's until it execs its own program."""
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_time(pid: str) -> tuple[tuple[int, int], float, float, str]:
    """``((pid, start tick), CPU seconds, age in seconds, name)`` of a running process."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rfind(")") + 2 :].split()
    with open("/proc/uptime") as f:
        age = float(f.read().split()[0]) - int(fields[19]) / _TICK
    name = stat[stat.find("(") + 1 : stat.rfind(")")]
    return (int(pid), int(fields[19])), (int(fields[11]) + int(fields[12])) / _TICK, age, name


def program(pid: str, name: str) -> tuple[str, str]:
    """``(command line, the test it was started by)`` of a running process."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    test = ""
    with open(f"/proc/{pid}/environ", "rb") as f:
        for entry in f.read().split(b"\0"):
            if entry.startswith(b"PYTEST_CURRENT_TEST="):
                test = entry.split(b"=", 1)[1].decode(errors="replace")
    return cmd or f"[{name}]", test  # no command line: a kernel thread


def charge(cmd: str, test: str) -> str:
    """The row a process's CPU time goes to."""
    if test:
        return test.split("::")[0]
    if cmd.startswith("["):
        return "(kernel threads)"
    if "/ray/" in cmd or cmd.startswith("ray::"):
        return "(Ray's daemons and workers)"
    if "pytest" in cmd or "execnet" in cmd or "import sys;exec(" in cmd:
        return "(pytest processes: collection and in-process tests)"
    return "(other: " + os.path.basename(cmd.split(" ")[0] or "?") + ")"


def main(argv: list[str]) -> int:
    mine = {p for p in os.listdir("/proc") if p.isdigit()}  # running before: not the suite's
    seen: dict[tuple[int, int], list] = {}
    settled: set[tuple[int, int]] = set()  # processes whose program is read for good
    done = threading.Event()

    def sweep() -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid in mine:
                continue
            try:
                key, cpu, age, name = cpu_time(pid)
                if key not in settled:  # new, or perhaps not yet exec'd its own program
                    seen[key] = [*program(pid, name), cpu]
                    if age > SETTLED_S:
                        settled.add(key)
                seen[key][2] = cpu
            except (OSError, IndexError, ValueError):  # it ended meanwhile, or is not ours
                pass

    def watch() -> None:
        while not done.wait(INTERVAL_S):
            sweep()

    start = time.perf_counter()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    status = subprocess.run([sys.executable, "-m", "pytest", *argv]).returncode
    wall = time.perf_counter() - start
    done.set()
    watcher.join()
    sweep()  # what is still running (a server or daemon left behind) counts whole
    rows: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for cmd, test, cpu in seen.values():
        row = rows[charge(cmd, test)]
        row[0] += cpu
        row[1] += 1
    total = sum(cpu for cpu, _ in rows.values())
    print(f"\npytest: exit {status}, {wall:.0f} s wall, {total:.0f} s CPU in "
          f"{len(seen)} processes ({total / wall:.2f} cores busy on average)")  # fmt: skip
    print(f"{'CPU s':>8} {'share':>6} {'procs':>6}  charged to")
    for name, (cpu, count) in sorted(rows.items(), key=lambda kv: -kv[1][0]):
        print(f"{cpu:8.1f} {cpu / max(total, 1e-9):6.1%} {count:6d}  {name}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

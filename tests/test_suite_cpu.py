"""``scripts/suite_cpu.py``: a test's CPU time, its subprocesses' included, is charged to its
module; processes no test started are charged to their kind."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys

from tests.helpers import REPO

ROW = re.compile(r"^\s*([\d.]+)\s+[\d.]+%\s+\d+  (.+)$", re.M)

BURN = """
import subprocess, sys
from pathlib import Path

# 1 s of CPU, then it waits, still running, for the sampler's last reading after pytest ends
BURNER = ("import signal, time\\nt = time.process_time()\\n"
          "while time.process_time() - t < 1.0: pass\\nprint('burnt', flush=True)\\nsignal.pause()")

def test_burns_in_a_subprocess():
    burner = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    Path("burner.pid").write_text(str(burner.pid))
    assert burner.stdout.readline() == "burnt\\n"
"""


def test_a_subprocess_s_cpu_time_is_charged_to_the_test_module_that_started_it(tmp_path):
    (tmp_path / "test_burn.py").write_text(BURN)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # as from a shell
    try:
        res = subprocess.run([sys.executable, str(REPO / "scripts/suite_cpu.py"), "-q",
                              "-p", "no:cacheprovider", "test_burn.py"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.kill(int((tmp_path / "burner.pid").read_text()), signal.SIGKILL)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "pytest: exit 0, " in res.stdout
    rows = {name: float(cpu) for cpu, name in ROW.findall(res.stdout)}
    assert 0.95 <= rows["test_burn.py"] <= 3.0, res.stdout  # the 1 s burn, and its start-up
    assert "(pytest processes: collection and in-process tests)" in rows, res.stdout


def test_a_process_is_charged_to_its_test_or_else_to_its_kind():
    spec = importlib.util.spec_from_file_location("suite_cpu", REPO / "scripts/suite_cpu.py")
    suite_cpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite_cpu)
    assert suite_cpu.charge("kedro run", "tests/a/test_b.py::test_c (call)") == "tests/a/test_b.py"
    ray = "/v/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet --x"
    assert suite_cpu.charge(ray, "") == "(Ray's daemons and workers)"
    assert suite_cpu.charge("/usr/lib/chromium/chromium --type=gpu", "") == "(other: chromium)"
    assert suite_cpu.charge("[kworker/1:2-events]", "") == "(kernel threads)"

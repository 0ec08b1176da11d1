"""The first look at a machine with an NVIDIA GPU, in one command, inside a time budget.

    scripts/gpu_check.sh OUT [--budget 540]                # the project installed
    scripts/gpu_check.sh OUT --bundle .whl [--budget 540]  # an offline machine: set-up included
    scripts/gpu_check.sh --plan [--bundle .whl]            # the steps and their caps; runs nothing
    scripts/gpu_check.sh OUT --tiny                        # the same steps at smoke sizes (CI)

GPU time is scarce: the check ends inside ``--budget`` seconds (default 540, 9 minutes) on any
machine, its set-up included. Its steps, most valuable first, each under a cap (a fixed one,
or its share of the time left: a step that ends early leaves its time to the later ones),
each writing its row to ``OUT/results.jsonl`` as it ends. No step can end the check: a step
that fails, raises or runs out of time is a row with ``ok: false``, its error and the last
lines of its log, and the next step runs.

0. ``plan``: every step's cap if each used all of it, and whether they fit the budget.
1. ``setup``: with ``--bundle DIR``, every wheel of DIR installed into a new target folder
   (``pip --no-index --no-deps --target``, beside the machine's own packages), its bytecode
   compiled, ``pip list`` and ``pip check`` (a version outside a dependency's range is
   reported, not fatal); then, always, Kedro, MLflow and the project imported.
2. ``env``: Python, torch, CUDA and ``nvidia-smi -L`` (60 s: a cold torch import and the
   first CUDA context), and the C compiler and ``Python.h`` Triton builds its launcher with:
   without them the compiled steps are rows that say so, and their time goes to the others.
3. ``time_to_target``: ``kedro run --env gpu`` (conf/gpu: the eager search, evaluation off
   the critical path) with the public sets scored by MCTS-600 every generation, in a project
   copy outside OUT; stopped with Ctrl-C at its cap, or once ``solver.acc`` >= 0.85 and
   MCTS-600 makes <= 0.5% weak mistakes on both public Pons sets. Per generation made: when
   its model and its scorecard were written (seconds since ``kedro run`` started) and the
   scorecard's lag behind the model, the self-play, compile, train and evaluate seconds,
   ``solver.acc`` and the weak mistakes.
4. ``bench_eager``: ``bench selfplay``'s eager cells (host_sync, device) at B = 16,384 with
   the recipe's network and search size, while ``nvidia-smi`` samples the GPU (the first
   H200 finished one cell of four in 77 s: B = 65,536 is gone).
5. ``cuda_tests``: the CUDA tests with ``pytest -rA``, the eager one first (its own cap, so
   it always reports), then the compiled ones (inductor compiles for CUDA) with the rest;
   each test's outcome in the row's ``tests``.
6. ``bench_compiled``: the compiled cell at B = 16,384, twice with one fresh inductor cache:
   cold (compiling), then warm (loading it): rows ``bench_compiled_cold`` and ``_warm``.

``OUT`` holds at most 8 files, none in a subfolder: ``results.jsonl``, ``summary.md`` (the
Markdown table, rewritten after every row), ``gpu.csv`` (utilisation samples, a step's name
on each line) and a log per step that runs a command (``setup``, ``time_to_target``,
``bench_eager``, ``cuda_tests``, ``bench_compiled``). The exit status is 1 if a step failed.

Kedro is started as ``python -m kedro`` and the project from this checkout's ``src`` (on
``PYTHONPATH``), so an interpreter with no ``kedro`` script beside it, and a project copied
without its git-ignored files (a ``git archive``), run the check as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_ACC = 0.85
TARGET_WEAK = 0.005
PUBLIC_SETS = ("Test_L3_R1", "Test_L2_R1")


@dataclass(frozen=True)
class Step:
    name: str
    fixed: float | None = None  # a fixed cap in seconds, or
    share: float = 0.0  # a share of the time left among the shared steps still to run


STEPS = (
    Step("setup", fixed=60.0),
    Step("env", fixed=60.0),
    Step("time_to_target", share=0.45),
    Step("bench_eager", share=0.12),
    Step("cuda_tests", share=0.28),
    Step("bench_compiled", share=0.15),
)
"""The steps in order. ``setup``'s 60 s are its allowance with ``--bundle`` (12 s for the lent
GPU machine's 55 wheels, 33 MiB, on a 2-core CPU; 13.6 s for 60 wheels on the first H200); without a bundle it only imports (30 s). ``cuda_tests``
compiles two programs with inductor (57 s cold on a 2-core CPU: ``tests/core/test_compiled``'s
two CUDA tests run on the CPU), hence its share."""
STOP_S = 15.0
"""Seconds kept back from each cap to stop its command and write its row."""
MIN_BUDGET = 120.0
EAGER_TEST_S = 90.0
"""The eager CUDA test's cap, at most: it runs first, so it reports whatever the compiled
ones need."""
CUDA_TESTS = {  # the `gpu`-marked tests: eager first
    "eager": ["tests/core/test_mcts.py", "tests/core/test_evaluation.py"],
    "compiled": ["tests/core/test_compiled.py"],
}
LOG_TAIL = 1500
"""Characters of a failed step's log kept in its row."""
TINY_RUN = {
    "alphazero.num_generations": 3,  # overlapped nodes across generations (the scorecards)
    "evaluate.benchmark.sims": [2],
    "evaluate.full_every": 1,  # every scorecard in full, as conf/gpu's
}
"""``--tiny``: the project's tiny recipe (``conf/tiny``, read when the set-up has made the
project importable) for 3 generations, the public sets scored at its size."""
RECIPE = {"model": "small", "sims": "32"}
"""conf/gpu's network preset and simulations, for the benchmark cells."""


def cap_of(left: float, step: str, steps: tuple[Step, ...] = STEPS) -> float:
    """Step ``step``'s cap in seconds with ``left`` seconds of the budget left: its fixed cap
    (never more than what is left less :data:`STOP_S`), or its share of ``left``, once the
    fixed steps still to come have their caps, among the shared steps from it on, less
    :data:`STOP_S`; never below 1 s."""
    names = [s.name for s in steps]
    here = steps[names.index(step)]
    later = steps[names.index(step) :]
    if here.fixed is not None:
        return max(1.0, min(here.fixed, left - STOP_S))
    reserved = sum(s.fixed + STOP_S for s in later if s.fixed is not None)
    shares = sum(s.share for s in later if s.fixed is None)
    return max(1.0, (left - reserved) * here.share / shares - STOP_S)


def plan(budget: float, steps: tuple[Step, ...]) -> tuple[dict[str, float], float]:
    """Every step's cap if each step before it used all of its own, and the seconds left then
    (>= 0: the caps and their stop margins fit the budget)."""
    caps, left = {}, budget
    for step in steps:
        caps[step.name] = round(cap_of(left, step.name, steps), 1)
        left -= caps[step.name] + STOP_S
    return caps, left


class Check:
    def __init__(self, out: Path, budget: float, env: dict[str, str], steps: tuple[Step, ...]):
        self.out, self.budget, self.env, self.steps = out, budget, env, steps
        self.start = time.perf_counter()
        self.rows: list[dict] = []
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.jsonl").write_text("")
        (out / "gpu.csv").write_text("step,utilization_gpu_pct,memory_used_mib\n")

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def cap(self, step: str) -> float:
        return cap_of(self.left(), step, self.steps)

    def record(self, step: str, ok: bool, seconds: float, **figures) -> dict:
        row = {"step": step, "ok": ok, "seconds": round(seconds, 1), **figures}
        self.rows.append(row)
        with open(self.out / "results.jsonl", "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        self.summary()
        how = "skipped" if "skipped" in row else ("ok" if ok else "FAILED")
        print(f"gpu_check: {step}: {how} in {seconds:.0f} s "
              f"({max(self.left(), 0):.0f} s of the budget left)", flush=True)  # fmt: skip
        return row

    def guarded(self, step: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, whose rows it records itself; any exception it raises is a
        failed row of ``step`` with the error and the end of ``step``'s log."""
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            self.record(step, False, time.perf_counter() - start,
                        error=f"{type(exc).__name__}: {exc}"[:500],
                        traceback=traceback.format_exc()[-LOG_TAIL:],
                        log_tail=self.log_tail(step))  # fmt: skip
            return None

    def log_path(self, step: str) -> Path:
        return self.out / f"{step.removesuffix('_cold').removesuffix('_warm')}.log"

    def log_tail(self, step: str) -> str:
        try:
            return self.log_path(step).read_text(errors="replace")[-LOG_TAIL:]
        except OSError:
            return ""

    def run(self, step: str, cmd: list[str], timeout: float, cwd: Path = REPO, env=None):
        """Run ``cmd`` under ``timeout``, its output appended to ``step``'s log; returns
        ``(ok, seconds, stdout)``. A command that cannot start, or runs out of time, is not ok."""
        start = time.perf_counter()
        try:
            res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                                 env={**self.env, **(env or {})})  # fmt: skip
            ok, stdout, stderr = res.returncode == 0, res.stdout, res.stderr
            if not ok:
                stderr += f"\nexit status {res.returncode}"
        except subprocess.TimeoutExpired as exc:
            ok, stdout = False, _text(exc.stdout)
            stderr = _text(exc.stderr) + f"\nstopped at its cap, {timeout:.0f} s"
        except OSError as exc:
            ok, stdout, stderr = False, "", f"could not start: {exc}"
        with open(self.log_path(step), "a") as log:
            log.write(f"$ {' '.join(cmd)}\n{stdout}\n--- stderr ---\n{stderr}\n")
        return ok, time.perf_counter() - start, stdout

    def summary(self) -> None:
        lines = ["| step | ok | seconds | figures |", "|---|---|---|---|"]
        hidden = ("step", "ok", "seconds", "table", "per_generation", "traceback", "log_tail",
                  "pip_list")  # fmt: skip
        for row in self.rows:
            figs = ", ".join(f"{k} {_fmt(v)}" for k, v in row.items() if k not in hidden)
            ok = "skipped" if "skipped" in row else ("yes" if row["ok"] else "**no**")
            lines.append(f"| {row['step']} | {ok} | {row['seconds']} | {figs} |")
        for row in self.rows:
            if row.get("table"):
                lines += ["", f"### {row['step']}", "", *row["table"]]
        (self.out / "summary.md").write_text("\n".join(lines) + "\n")


def _text(x) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _python_path(*entries: Path) -> str:
    old = os.environ.get("PYTHONPATH")
    return os.pathsep.join([*map(str, entries), *([old] if old else [])])


def step_setup(check: Check, bundle: Path | None, site: Path | None) -> bool:
    """Install ``bundle`` into ``site`` (if given), then import what every later step needs."""
    start = time.perf_counter()
    cap = check.cap("setup")
    figures: dict = {}
    ok = True
    if bundle is not None:
        wheels = sorted(bundle.glob("*.whl"))
        if not wheels:
            raise FileNotFoundError(f"--bundle {bundle}: no wheels there")
        pip = [sys.executable, "-m", "pip"]
        quiet = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        ok, _, _ = check.run("setup", [*pip, "install", "--quiet", "--no-index", "--no-deps",
                                       "--no-compile", "--target", str(site), *map(str, wheels)],
                             max(1.0, cap - (time.perf_counter() - start)), env=quiet)  # fmt: skip
        figures.update(wheels=len(wheels), bundle_mb=round(sum(w.stat().st_size
                       for w in wheels) / 2**20, 1), site=str(site))  # fmt: skip
        if ok:  # compiled once on every core: PYTHONDONTWRITEBYTECODE would recompile per process
            check.run("setup", [sys.executable, "-m", "compileall", "-q", "-j", "0", "-x",
                                "/templates/", str(site)],  # Kedro's cookiecutter files
                      max(1.0, cap - (time.perf_counter() - start)))  # fmt: skip
            _, _, listed = check.run("setup", [*pip, "list", "--format=freeze"],
                                     max(1.0, cap - (time.perf_counter() - start)), env=quiet)  # fmt: skip
            figures["packages"] = len(listed.splitlines())
            _, _, problems = check.run("setup", [*pip, "check"],
                                       max(1.0, cap - (time.perf_counter() - start)), env=quiet)  # fmt: skip
            # The machine's own packages are used as they are: a range they miss is reported.
            figures["pip_check"] = [x for x in problems.splitlines() if x.strip()][:20]
    code = ("import json, kedro, kedro_mlflow, mlflow, connect_zero_pipeline as cz; "
            "print(json.dumps({'kedro': kedro.__version__, 'mlflow': mlflow.__version__, "
            "'kedro_mlflow': kedro_mlflow.__version__, 'project': cz.__version__, "
            "'kedro_from': kedro.__file__}))")  # fmt: skip
    if ok:
        ok, _, stdout = check.run("setup", [sys.executable, "-c", code],
                                  max(1.0, cap - (time.perf_counter() - start)))  # fmt: skip
        if ok:
            figures.update(json.loads(stdout.strip().splitlines()[-1]))
    check.record("setup", ok, time.perf_counter() - start, cap_s=round(cap), **figures,
                 **({} if ok else {"log_tail": check.log_tail("setup")}))  # fmt: skip
    return ok


def step_env(check: Check) -> bool:
    start = time.perf_counter()
    code = ("import json, torch; print(json.dumps({'torch': torch.__version__, "
            "'cuda': torch.version.cuda, 'cuda_available': torch.cuda.is_available(), "
            "'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}))")  # fmt: skip
    info: dict = {"python": sys.version.split()[0]}
    try:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=check.cap("env"), env=check.env)  # fmt: skip
        ok = res.returncode == 0
        info.update(json.loads(res.stdout) if ok else {"error": res.stderr[-LOG_TAIL:]})
    except subprocess.TimeoutExpired as exc:
        ok, info["error"] = False, f"torch's import and CUDA's start took over {exc.timeout:.0f} s"
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            info["nvidia_smi"] = subprocess.run([smi, "-L"], capture_output=True, text=True,
                                                timeout=10).stdout.strip()  # fmt: skip
        except subprocess.TimeoutExpired:
            info["nvidia_smi"] = "no answer in 10 s"
    info.update(toolchain())
    check.record("env", ok, time.perf_counter() - start, **info)
    return info


def toolchain(env: dict[str, str] | None = None) -> dict:
    """What inductor's CUDA code needs on the machine: Triton builds its launcher with a C
    compiler (``CC``, else ``gcc``, else ``clang``, as Triton looks) against this Python's
    ``Python.h``."""
    env = os.environ if env is None else env
    path = env.get("PATH", os.defpath)
    named = env.get("CC")
    cc = (shutil.which(named, path=path) if named else None) or next(
        filter(None, (shutil.which(c, path=path) for c in ("gcc", "clang"))), None)  # fmt: skip
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return {"c_compiler": cc, "python_h": str(header) if header.is_file() else None}


def compiles(info: dict) -> bool:
    """Whether the compiled steps can run: a C compiler and ``Python.h`` (:func:`toolchain`)."""
    return bool(info.get("c_compiler") and info.get("python_h"))


NEEDS_COMPILER = "needs a C compiler and Python.h (Triton builds its launcher with them)"


def without_compiler(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """The steps when nothing can be compiled: no ``bench_compiled``, and ``cuda_tests`` only
    its eager test's fixed cap; their time goes to the others."""
    return tuple(Step(s.name, fixed=EAGER_TEST_S) if s.name == "cuda_tests" else s
                 for s in steps if s.name != "bench_compiled")  # fmt: skip


def _bench(check: Check, step: str, args: list[str], timeout: float, env=None) -> list[dict]:
    """``bench`` with ``args``; its JSON lines, and the step's figures and table recorded."""
    sampler = _GpuSampler(check.out / "gpu.csv", step)
    try:
        ok, seconds, stdout = check.run(step, [sys.executable, "-m", "connect_zero_pipeline",
                                               "bench", *args], timeout, env=env)  # fmt: skip
    finally:
        util = sampler.stop()
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    ok = ok and bool(lines)
    check.record(step, ok, seconds, cap_s=round(timeout), lines=len(lines), **util,
                 table=_bench_table(lines),
                 **({} if ok else {"log_tail": check.log_tail(step)}))  # fmt: skip
    return lines


def _bench_table(lines: list[dict]) -> list[str]:
    """One row per cell (every key but figure/value), one column per figure."""
    cells: dict[tuple, dict] = {}
    for line in lines:
        key = tuple((k, v) for k, v in line.items()
                    if k not in ("figure", "value", "unit", "bench", "baseline_value", "ratio"))  # fmt: skip
        cells.setdefault(key, {})[line["figure"]] = line["value"]
    if not cells:
        return []
    figures = list(dict.fromkeys(f for c in cells.values() for f in c))
    keys = list(dict.fromkeys(k for key in cells for k, _ in key))
    rows = [f"| {' | '.join(keys + figures)} |", "|" + "---|" * (len(keys) + len(figures))]
    for key, figs in cells.items():
        named = dict(key)
        vals = [str(named.get(k, "")) for k in keys] + [_fmt(figs.get(f, "")) for f in figures]
        rows.append(f"| {' | '.join(vals)} |")
    return rows


class _GpuSampler:
    """``nvidia-smi`` utilisation samples every 0.5 s while a step runs, appended to one
    CSV with the step's name (none without ``nvidia-smi``)."""

    def __init__(self, path: Path, step: str):
        smi = shutil.which("nvidia-smi")
        self.path, self.step, self.proc = path, step, None
        if smi:
            self.proc = subprocess.Popen(
                [smi, "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits",
                 "-lms", "500"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        try:
            out, _ = self.proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        rows = [[x.strip() for x in r.split(",")] for r in out.splitlines() if r.strip()]
        rows = [r for r in rows if len(r) == 2 and all(x.replace(".", "").isdigit() for x in r)]
        with open(self.path, "a") as f:
            f.writelines(f"{self.step},{u},{m}\n" for u, m in rows)
        if not rows:
            return {}
        util, mem = [float(r[0]) for r in rows], [float(r[1]) for r in rows]
        busy = [u for u in util if u > 0]
        return {"gpu_util_mean": sum(util) / len(util), "gpu_util_busy_mean":
                sum(busy) / max(len(busy), 1), "gpu_mem_max_mib": max(mem)}  # fmt: skip


def use_project(site: Path | None) -> None:
    """Make the project importable here, as every command of the check imports it: the
    bundle's folder (if any) and this checkout's ``src`` first on ``sys.path``."""
    for entry in (REPO / "src", *([site] if site else [])):
        if str(entry) not in sys.path:
            sys.path.insert(0, str(entry))


def project_copy(dest: Path) -> Path:
    """A new project for the run (the project's own ``new_project``): its conf/, the public
    sets and the shipped solver set, and an MLflow store of its own; runs write there."""
    from connect_zero_pipeline.common.project import new_project

    return new_project(REPO, dest, store=dest / "mlflow.db", solver_set=True)


def _weak(metrics: dict, sims: int) -> dict[str, float | None]:
    return {s: metrics.get(f"bench.{s}.mcts{sims}.weak_mistake_rate") for s in PUBLIC_SETS}


def _reached(row: dict) -> dict[str, bool]:
    """Which targets a :func:`generation_rows` row's scorecard reached."""
    weak = [row[f"weak_{s}"] for s in PUBLIC_SETS]
    return {"acc": (row["solver_acc"] or 0.0) >= TARGET_ACC,
            "pons": all(w is not None and w <= TARGET_WEAK for w in weak)}  # fmt: skip


def generation_rows(project: Path, start_wall: float, sims: int) -> list[dict]:
    """Per generation of the project's run with a model or a scorecard so far (the project's
    ``run.outputs.generation_rows``, as ``curve --json --times`` prints them): when each was
    written (seconds since ``start_wall``) and the scorecard's lag behind the model, the
    stages' seconds, ``solver.acc`` and MCTS-``sims`` weak mistakes on the public sets (None
    for a scorecard not written yet)."""
    from connect_zero_pipeline.run.manifest import known_runs
    from connect_zero_pipeline.run.outputs import generation_rows as rows_of

    runs = known_runs(project)
    if not runs:  # the run has not written its manifest yet
        return []
    return [{"generation": r["generation"], "model_at_s": r["model_at_s"],
             "scorecard_at_s": r["scorecard_at_s"], "scorecard_lag_s": r["scorecard_lag_s"],
             "selfplay_s": r.get("selfplay.seconds"), "compile_s": r.get("selfplay.compile_s"),
             "train_s": r.get("train.train_seconds"), "evaluate_s": r.get("evaluate.seconds"),
             "solver_acc": r.get("solver.acc"), **{f"weak_{s}": w for s, w in _weak(r, sims).items()}}
            for r in rows_of(project, runs[-1], times=True, start=start_wall)]  # fmt: skip


def _interrupt(proc: subprocess.Popen, wait_s: float) -> None:
    """Ctrl-C, as a person would; killed if it has not ended within ``wait_s``."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def step_run(check: Check, step: str, params: dict, sims: int, watch: bool,
             keep: Path | None) -> None:  # fmt: skip
    """``kedro run --env gpu`` in a project copy outside OUT (a temporary folder, or
    ``keep``), stopped at its cap (and, with ``watch``, once both targets are reached); its
    log is ``OUT/<step>.log``."""
    from connect_zero_pipeline.common.config_loader import params_text

    cap = check.cap(step)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        project = project_copy((keep or Path(tmp)) / "project")
        cmd = [sys.executable, "-m", "kedro", "run", "--env", "gpu", "--params",
               params_text(params)]  # fmt: skip
        sampler = _GpuSampler(check.out / "gpu.csv", step)
        first: dict[str, float] = {}
        try:
            with open(check.log_path(step), "w") as log:
                log.write(f"$ {' '.join(cmd)}\n")
                log.flush()
                start_wall, start = time.time(), time.perf_counter()
                proc = subprocess.Popen(cmd, cwd=project, stdout=log, stderr=subprocess.STDOUT,
                                        env={**check.env, "TQDM_DISABLE": "1"})  # fmt: skip
                try:
                    while proc.poll() is None and time.perf_counter() - start < cap:
                        time.sleep(1.0)
                        for row in generation_rows(project, start_wall, sims):
                            for name, hit in _reached(row).items():
                                if hit and name not in first and row["scorecard_at_s"] is not None:
                                    first[name] = row["scorecard_at_s"]
                        if watch and len(first) == 2:
                            break
                finally:
                    stopped = proc.poll() is None
                    if stopped:  # its cap, both targets, or an error here
                        _interrupt(proc, STOP_S * 0.6)
        finally:
            util = sampler.stop()
        rows = generation_rows(project, start_wall, sims)
    ok, figures = run_figures(rows, proc.returncode, stopped, first, sims)
    check.record(step, ok, time.perf_counter() - start, cap_s=round(cap), **figures, **util,
                 **({} if ok else {"log_tail": check.log_tail(step)}))  # fmt: skip


def run_figures(rows: list[dict], exit_status: int | None, stopped: bool,
                first: dict[str, float], sims: int) -> tuple[bool, dict]:  # fmt: skip
    """Whether the watched run is ok (it ended well, or was stopped, with a generation's
    model made) and its row's figures from :func:`generation_rows`: the generations made and
    scored, the scorecards' lag behind their models, and the per-generation table."""
    models = [r for r in rows if r["model_at_s"] is not None]
    cards = [r for r in rows if r["scorecard_at_s"] is not None]
    lags = [r["scorecard_lag_s"] for r in rows if r["scorecard_lag_s"] is not None]
    names = ["generation", "model at s", "scorecard at s", "scorecard lag s", "self-play s",
             "compile s", "train s", "evaluate s", "solver.acc",
             *(f"{s} MCTS-{sims} weak" for s in PUBLIC_SETS)]  # fmt: skip
    table = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for r in rows:
        cells = [r["generation"], r["model_at_s"], r["scorecard_at_s"], r["scorecard_lag_s"],
                 r["selfplay_s"], r["compile_s"], r["train_s"], r["evaluate_s"], r["solver_acc"],
                 *(r[f"weak_{s}"] for s in PUBLIC_SETS)]  # fmt: skip
        table.append("| " + " | ".join("-" if c is None else _fmt(c) for c in cells) + " |")
    ok = (exit_status == 0 or stopped) and bool(models)
    return ok, {
        "exit_status": exit_status, "generations": len(models), "scorecards": len(cards),
        "stopped_at_cap": stopped and len(first) < 2,
        "seconds_to_acc": first.get("acc"), "seconds_to_pons": first.get("pons"),
        "last_solver_acc": cards[-1]["solver_acc"] if cards else None,
        "first_model_s": models[0]["model_at_s"] if models else None,
        "first_scorecard_s": cards[0]["scorecard_at_s"] if cards else None,
        "scorecard_lag_max_s": max(lags, default=None),
        "scorecard_lag_last_s": lags[-1] if lags else None,
        "per_generation": rows, "table": table,
    }  # fmt: skip


def _outcomes(stdout: str) -> dict[str, list[str]]:
    """Test names by outcome, from ``pytest -v -rA``'s lines: each test's line as it ends
    (``file::name PASSED``), so a run stopped at its cap still tells what finished, and the
    short summary (``PASSED file::name``)."""
    words = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
    found: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and "::" in parts[0] and parts[1] in words:
            outcome, name = parts[1], parts[0]
        elif len(parts) >= 2 and parts[0] in words and "::" in parts[1]:
            outcome, name = parts[0], parts[1]
        else:
            continue
        name = name.rsplit("::", 1)[-1]
        if name not in found.setdefault(outcome.lower(), []):
            found[outcome.lower()].append(name)
    return found


def step_tests(check: Check, cuda: bool, compiled: bool = True) -> None:
    """The CUDA tests: the eager one under its own cap, then (with ``compiled``: a C compiler
    and ``Python.h``) the compiled ones. Each test's outcome is in the row's ``tests``
    (``passed``, ``skipped``, ...): the row is skipped only without CUDA."""
    if not cuda:
        check.record("cuda_tests", True, 0.0, skipped="no CUDA")
        return
    start = time.perf_counter()
    cap = check.cap("cuda_tests")
    found: dict[str, list[str]] = {}
    seconds_of: dict[str, float] = {}
    oks = []
    parts = CUDA_TESTS if compiled else {"eager": CUDA_TESTS["eager"]}
    for part, files in parts.items():
        spent = time.perf_counter() - start
        timeout = min(EAGER_TEST_S, cap / 3) if part == "eager" and compiled else cap - spent
        cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-v", "-rA", "-p", "no:cacheprovider",
               *files]  # fmt: skip
        ok, seconds, stdout = check.run("cuda_tests", cmd, max(1.0, timeout))
        oks.append(ok)
        for outcome, names in _outcomes(stdout).items():
            found.setdefault(outcome, []).extend(names)
        seconds_of[f"{part}_s"] = round(seconds, 1)
    ok = all(oks) and bool(found.get("passed"))
    check.record("cuda_tests", ok, time.perf_counter() - start, cap_s=round(cap), tests=found,
                 **seconds_of, **({} if compiled else {"compiled": NEEDS_COMPILER}),
                 **({} if ok else {"log_tail": check.log_tail("cuda_tests")}))  # fmt: skip


def step_compiled(check: Check, args: list[str], backend: str) -> None:
    """The compiled cell, cold then warm, with one fresh inductor cache."""
    with tempfile.TemporaryDirectory(prefix="inductor_") as cache:
        env = {"TORCHINDUCTOR_CACHE_DIR": cache}
        for run in ("cold", "warm"):
            left = check.left()
            cap = check.cap("bench_compiled") if run == "cold" else left - STOP_S
            if cap < 5:
                check.record(f"bench_compiled_{run}", False, 0.0, skipped="no time left")
                continue
            _bench(check, f"bench_compiled_{run}", [*args, "--ways", "compiled", "--compile",
                                                   backend], cap, env=env)  # fmt: skip


def compiled_cells(check: Check, compiled: bool, args: list[str], backend: str) -> None:
    """``bench_compiled``'s two rows: the cells, or rows that say what is missing."""
    if not compiled:
        for run in ("cold", "warm"):
            check.record(f"bench_compiled_{run}", True, 0.0, skipped=NEEDS_COMPILER)
        return
    check.guarded("bench_compiled_cold", step_compiled, check, args, backend)


def _plan_text(budget: float, steps: tuple[Step, ...]) -> str:
    caps, left = plan(budget, steps)
    lines = [f"gpu_check plan: {budget:.0f} s in all, each step under its cap, {STOP_S:.0f} s "
             "kept back after each to stop it and write its row:"]  # fmt: skip
    for step in steps:
        how = (f"fixed {step.fixed:.0f} s" if step.fixed is not None
               else f"{step.share:.0%} of the time left")  # fmt: skip
        lines.append(f"  {step.name:<16} cap {caps[step.name]:>5.0f} s  ({how})")
    left = 0.0 if abs(left) < 0.5 else left
    lines.append(f"  {'(left over)':<16}     {left:>5.0f} s if every step used its whole cap")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/gpu_check.sh", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, nargs="?", help="folder for the results (created)")
    parser.add_argument("--bundle", type=Path, default=None,
                        help="a folder of wheels (scripts/offline_wheels.sh download --have): "
                        "installed into --site first, inside the budget")  # fmt: skip
    parser.add_argument(
        "--site",
        type=Path,
        default=None,
        help="where --bundle is installed (default: a new temporary folder)",
    )
    parser.add_argument("--tiny", action="store_true", help="smoke sizes, any device (CI)")
    parser.add_argument(
        "--budget",
        type=float,
        default=540.0,
        help="seconds the whole check may take, set-up included (default 540)",
    )
    parser.add_argument(
        "--plan", action="store_true", help="print the steps and their caps, run nothing"
    )
    parser.add_argument("--keep", type=Path, default=None,
                        help="make the time-to-target run's project copy in this new folder "
                        "and keep it (default: a temporary folder, removed)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.budget < MIN_BUDGET:
        parser.error(f"--budget {args.budget:g}: at least {MIN_BUDGET:g} seconds")
    if args.bundle is not None and not args.bundle.is_dir():
        parser.error(f"--bundle {args.bundle}: no such folder")
    steps = STEPS if args.bundle is not None else tuple(
        Step("setup", fixed=30.0) if s.name == "setup" else s for s in STEPS)  # fmt: skip
    if args.plan:
        print(_plan_text(args.budget, steps))
        return 0
    if args.out is None:
        parser.error("OUT is required (or --plan)")
    site = None
    if args.bundle is not None:
        site = (args.site or Path(tempfile.mkdtemp(prefix="gpu_check_site_"))).resolve()
    env = {**os.environ, "PYTHONPATH": _python_path(*([site] if site else []), REPO / "src"),
           "DO_NOT_TRACK": "1", "KEDRO_DISABLE_TELEMETRY": "1"}  # fmt: skip
    check = Check(args.out.resolve(), args.budget, env, steps)
    caps, left = plan(args.budget, steps)
    check.record("plan", left >= -1e-6 and all(c >= 1 for c in caps.values()), 0.0,
                 budget=args.budget, caps=caps, bundle=str(args.bundle) if args.bundle else None)  # fmt: skip
    ready = check.guarded("setup", step_setup, check, args.bundle, site)
    use_project(site)
    if not ready:
        for name in ("env", "time_to_target", "bench_eager", "cuda_tests", "bench_compiled"):
            check.record(name, False, 0.0, skipped="the set-up failed: see setup.log")
        return 1
    info = check.guarded("env", step_env, check) or {}
    cuda = bool(info.get("cuda_available"))
    device = "cuda" if cuda else "cpu"
    compiled = not cuda or compiles(info)  # inductor's CUDA code needs them (the CPU traces)
    if not compiled:
        check.steps = without_compiler(check.steps)
    if args.tiny:
        from connect_zero_pipeline.common.config_loader import env_params

        # As on a GPU on any device: the searches' network on torch (auto is onnxruntime on
        # the CPU), in this process (conf/tiny's selfplay.node.workers).
        recipe = {k: v for k, v in env_params(REPO / "conf", "tiny").items()
                  if not k.startswith("reinforce.")}  # fmt: skip
        tiny = {**recipe, **TINY_RUN,
                **{f"{s}.node.device": device for s in ("selfplay", "train", "evaluate")},
                **{f"{s}.node.backend": "torch" for s in ("selfplay", "evaluate")}}  # fmt: skip
        check.guarded("time_to_target", step_run, check, "time_to_target", tiny, sims=2,
                      watch=False, keep=args.keep)  # fmt: skip
        cells = ["selfplay", "--quick", "--sizes", "32"]
        check.guarded("bench_eager", lambda: _bench(check, "bench_eager", [
            *cells, "--ways", "host_sync,device"], check.cap("bench_eager")))  # fmt: skip
        check.guarded("cuda_tests", step_tests, check, cuda, compiled)
        compiled_cells(check, compiled, cells, "inductor" if cuda else "eager")
    elif not cuda:  # the recipe's sizes are for a GPU: the steps say so (--tiny runs them)
        for name in ("time_to_target", "bench_eager", "cuda_tests", "bench_compiled"):
            check.record(name, True, 0.0, skipped="needs CUDA (--tiny runs it on any device)")
    else:
        check.guarded("time_to_target", step_run, check, "time_to_target",
                      {"evaluate.benchmark.sims": [600]}, sims=600, watch=True, keep=args.keep)  # fmt: skip
        recipe = ["--model", RECIPE["model"], "--sims", RECIPE["sims"]]
        check.guarded("bench_eager", lambda: _bench(check, "bench_eager", [
            "selfplay", "--sizes", "16384", *recipe, "--ways", "host_sync,device"],
            check.cap("bench_eager")))  # fmt: skip
        check.guarded("cuda_tests", step_tests, check, cuda, compiled)
        compiled_cells(check, compiled, ["selfplay", "--sizes", "16384", *recipe], "inductor")
    if site is not None and args.site is None:
        shutil.rmtree(site, ignore_errors=True)
    total = time.perf_counter() - check.start
    print(f"gpu_check: {total:.0f} s of a {args.budget:.0f} s budget; {args.out / 'summary.md'}")
    return exit_status(check.rows)


def exit_status(rows: list[dict]) -> int:
    """1 if a step that ran failed (a skipped step, one with ``skipped``, is not judged)."""
    return 0 if all(r["ok"] for r in rows if "skipped" not in r) else 1


if __name__ == "__main__":
    sys.exit(main())

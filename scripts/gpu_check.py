"""The first look at a machine with an NVIDIA GPU, in one command, inside a time budget.

    scripts/gpu_check.sh OUT [--budget 540]   # every figure that matters, most valuable first
    scripts/gpu_check.sh OUT --tiny           # the same steps at smoke sizes, on any device (CI)

GPU time is scarce: the check ends inside ``--budget`` seconds (default 540, 9 minutes) on any
machine. Its steps, most valuable first, each capped from the time left (a step that ends
early leaves its time to the later ones) and each writing its figures to
``OUT/results.jsonl`` as it ends (a check cut short keeps what it measured):

1. ``env``: Python, torch, CUDA, the GPU (``nvidia-smi -L``).
2. ``time_to_target``: ``kedro run --env gpu`` (conf/gpu's default path: the eager
   host-sync search, nothing compiled) with the public sets scored by MCTS-600 every
   generation, in a project copy outside OUT; stopped with Ctrl-C at its cap, or once
   ``solver.acc`` >= 0.85 and MCTS-600 makes <= 0.5% weak mistakes on both public Pons sets.
   Per generation: seconds since ``kedro run`` started, self-play, compile, train and
   evaluate seconds, ``solver.acc`` and the weak mistakes.
3. ``bench_eager``: ``bench selfplay``'s eager cells (host_sync, device) at B = 16,384 and
   65,536 with the recipe's network and search size, while ``nvidia-smi`` samples the GPU.
4. ``cuda_tests``: ``pytest -m gpu`` (the CUDA tests, the sync-free check among them).
5. ``bench_compiled``: the compiled cell at B = 16,384, twice with one fresh inductor cache
   in a temporary folder: cold (compiling), then warm (loading it).

``OUT`` holds at most 8 files, none in a subfolder: ``results.jsonl``, ``summary.md`` (the
Markdown table, rewritten after every step), ``gpu.csv`` (utilisation samples, a step's name
on each line) and one ``<step>.log`` per step that runs a command. The exit status is 1 if a
step failed.

``--tiny`` runs the steps at smoke sizes on any device (without CUDA the CUDA tests are
skipped and say so; the compiled cells trace with torch.compile's ``eager`` backend) and
checks that the plan's caps fit the budget: a ``plan`` line first, with each step's share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CUDA_TESTS = ["tests/core/test_mcts.py", "tests/core/test_compiled.py"]  # the `gpu`-marked ones
TARGET_ACC = 0.85
TARGET_WEAK = 0.005
PUBLIC_SETS = ("Test_L3_R1", "Test_L2_R1")
STEPS = ("env", "time_to_target", "bench_eager", "cuda_tests", "bench_compiled")
SHARES = {"env": 0.02, "time_to_target": 0.52, "bench_eager": 0.16, "cuda_tests": 0.12,
          "bench_compiled": 0.18}  # fmt: skip
"""Each step's share of the budget, in order; a step's cap is its share of what is left
among the steps still to run, less :data:`STOP_S`."""
STOP_S = 15.0
"""Seconds kept back from each cap to stop its command and write its figures."""
MIN_BUDGET = 120.0
# Sizes of the tiny run: a generation in seconds on a CPU (tests/pipelines/alphazero).
TINY = {
    "alphazero.num_generations": 1,
    "selfplay.num_games": 8,
    "selfplay.mcts.sims": 2,
    "selfplay.moves_per_gen": 4,
    "selfplay.finish_games": "true",  # 4 steps finish no game: play them to their end
    "selfplay.node.workers": 1,
    "train.batch_size": 32,
    "train.samples_per_position": 1.0,
    "evaluate.num_games": 2,
    "evaluate.mcts.sims": 2,
    "evaluate.previous.num_games": 2,
    "evaluate.previous.mcts.sims": 2,
    "evaluate.benchmark.sims": [2],
    "pons.node.workers": 1,  # the public sets labelled in the run's process: no worker start-up
}
RECIPE = {"model": "small", "sims": "32"}
"""conf/gpu's network preset and simulations, for the benchmark cells."""


def params_arg(params: dict) -> str:
    """``--params`` text of a flat mapping (lists as ``[a,b]``)."""

    def text(v) -> str:
        if isinstance(v, list):
            return "[" + ",".join(map(str, v)) + "]"
        return str(v)

    return ",".join(f"{k}={text(v)}" for k, v in params.items())


def plan(left: float, step: str) -> float:
    """Step ``step``'s cap in seconds: its share of ``left`` among the steps from it on,
    less :data:`STOP_S` (never below 1 s)."""
    later = STEPS[STEPS.index(step) :]
    share = SHARES[step] / sum(SHARES[s] for s in later)
    return max(1.0, left * share - STOP_S)


class Check:
    def __init__(self, out: Path, budget: float):
        self.out, self.budget = out, budget
        self.start = time.perf_counter()
        self.rows: list[dict] = []
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.jsonl").write_text("")
        (out / "gpu.csv").write_text("step,utilization_gpu_pct,memory_used_mib\n")

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def cap(self, step: str) -> float:
        return plan(self.left(), step)

    def record(self, step: str, ok: bool, seconds: float, **figures) -> None:
        row = {"step": step, "ok": ok, "seconds": round(seconds, 1), **figures}
        self.rows.append(row)
        with open(self.out / "results.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        self.summary()
        print(f"gpu_check: {step}: {'ok' if ok else 'FAILED'} in {seconds:.0f} s "
              f"({max(self.left(), 0):.0f} s of the budget left)", flush=True)  # fmt: skip

    def run(self, step: str, cmd: list[str], timeout: float, cwd: Path = REPO, env=None):
        """Run ``cmd``, its output to ``OUT/<step>.log``; returns ``(ok, seconds, stdout)``."""
        start = time.perf_counter()
        try:
            res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                                 env={**os.environ, **(env or {})})  # fmt: skip
            ok, stdout, stderr = res.returncode == 0, res.stdout, res.stderr
        except subprocess.TimeoutExpired as exc:
            ok, stdout = False, _text(exc.stdout)
            stderr = _text(exc.stderr) + f"\nstopped at its cap, {timeout:.0f} s"
        with open(self.out / f"{step}.log", "a") as log:
            log.write(f"$ {' '.join(cmd)}\n{stdout}\n--- stderr ---\n{stderr}\n")
        return ok, time.perf_counter() - start, stdout

    def summary(self) -> None:
        lines = ["| step | ok | seconds | figures |", "|---|---|---|---|"]
        for row in self.rows:
            figs = ", ".join(f"{k} {_fmt(v)}" for k, v in row.items()
                             if k not in ("step", "ok", "seconds", "table", "per_generation"))  # fmt: skip
            lines.append(f"| {row['step']} | {'yes' if row['ok'] else '**no**'} | "
                         f"{row['seconds']} | {figs} |")  # fmt: skip
        for row in self.rows:
            if row.get("table"):
                lines += ["", f"### {row['step']}", "", *row["table"]]
        (self.out / "summary.md").write_text("\n".join(lines) + "\n")


def _text(x) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def step_env(check: Check) -> bool:
    start = time.perf_counter()
    code = ("import json, torch; print(json.dumps({'torch': torch.__version__, "
            "'cuda': torch.version.cuda, 'cuda_available': torch.cuda.is_available(), "
            "'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}))")  # fmt: skip
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=check.cap("env") + STOP_S)  # fmt: skip
    info = json.loads(res.stdout) if res.returncode == 0 else {"error": res.stderr[-500:]}
    smi = shutil.which("nvidia-smi")
    if smi:
        info["nvidia_smi"] = subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    info["python"] = sys.version.split()[0]
    check.record("env", res.returncode == 0, time.perf_counter() - start, **info)
    return bool(info.get("cuda_available"))


def _bench(check: Check, step: str, args: list[str], timeout: float, env=None) -> list[dict]:
    """``bench`` with ``args``; its JSON lines, and the step's figures and table recorded."""
    sampler = _GpuSampler(check.out / "gpu.csv", step)
    try:
        ok, seconds, stdout = check.run(step, [sys.executable, "-m", "connect_zero_pipeline",
                                               "bench", *args], timeout, env=env)  # fmt: skip
    finally:
        util = sampler.stop()
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    check.record(step, ok and bool(lines), seconds, lines=len(lines), **util,
                 table=_bench_table(lines))  # fmt: skip
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


def project_copy(dest: Path) -> Path:
    """A copy of the project's conf/, data skeleton and public sets: runs write there."""
    dest.mkdir(parents=True)  # a folder that exists is refused: nothing is overwritten
    shutil.copytree(REPO / "conf", dest / "conf", ignore=shutil.ignore_patterns("local"))
    (dest / "conf" / "local").mkdir()
    db = dest / "mlflow.db"
    (dest / "conf" / "local" / "mlflow.yml").write_text(
        f"server:\n  mlflow_tracking_uri: sqlite:///{db}\n  mlflow_registry_uri: sqlite:///{db}\n"
    )
    shutil.copytree(REPO / "tests/data/pons", dest / "tests/data/pons")
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    shipped = REPO / "data/03_primary/pons_positions.parquet"  # the evaluation set
    for layer in (REPO / "data").iterdir():
        if layer.is_dir():
            (dest / "data" / layer.name).mkdir(parents=True)
    shutil.copytree(shipped, dest / shipped.relative_to(REPO))
    (dest / "src").mkdir()
    return dest


def _metrics(project: Path, stage: str) -> dict[int, tuple[float, dict]]:
    """``{generation: (mtime, <stage> metrics)}`` of the run in ``project`` so far."""
    found = {}
    pattern = f"gen_*/{stage}_metrics.json/*/{stage}_metrics.json"
    for path in (project / "data/08_reporting").glob(pattern):
        try:
            found[int(path.parts[-4].split("_")[1])] = (path.stat().st_mtime,
                                                        json.loads(path.read_text()))  # fmt: skip
        except (OSError, ValueError):  # being written
            continue
    return found


def _weak(metrics: dict, sims: int) -> dict[str, float | None]:
    return {s: metrics.get(f"bench.{s}.mcts{sims}.weak_mistake_rate") for s in PUBLIC_SETS}


def _reached(metrics: dict, sims: int) -> dict[str, bool]:
    weak = _weak(metrics, sims)
    return {"acc": metrics.get("solver.acc", 0.0) >= TARGET_ACC,
            "pons": all(w is not None and w <= TARGET_WEAK for w in weak.values())}  # fmt: skip


def generation_rows(project: Path, start_wall: float, sims: int) -> list[dict]:
    """Per generation so far: seconds since the start (its evaluation's end), the stages'
    seconds, ``solver.acc`` and MCTS-``sims`` weak mistakes on the public sets."""
    evals = _metrics(project, "eval")
    plays, trains = _metrics(project, "selfplay"), _metrics(project, "train")
    rows = []
    for gen, (mtime, m) in sorted(evals.items()):
        play, train = plays.get(gen, (0, {}))[1], trains.get(gen, (0, {}))[1]
        rows.append({"generation": gen, "since_start_s": round(mtime - start_wall, 1),
                     "selfplay_s": play.get("seconds"), "compile_s": play.get("compile_s"),
                     "train_s": train.get("train_seconds"), "evaluate_s": m.get("evaluate.seconds"),
                     "solver_acc": m.get("solver.acc"),
                     **{f"weak_{s}": w for s, w in _weak(m, sims).items()}})  # fmt: skip
    return rows


def step_run(check: Check, step: str, params: dict, sims: int, watch: bool,
             keep: Path | None) -> None:  # fmt: skip
    """``kedro run --env gpu`` in a project copy outside OUT (a temporary folder, or
    ``keep``), stopped at its cap (and, with ``watch``, once both targets are reached); its
    log is ``OUT/<step>.log``."""
    cap = check.cap(step)
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        project = project_copy((keep or Path(tmp)) / "project")
        cmd = [str(Path(sys.executable).with_name("kedro")), "run", "--env", "gpu",
               "--params", params_arg(params)]  # fmt: skip
        sampler = _GpuSampler(check.out / "gpu.csv", step)
        first: dict[str, float] = {}
        with open(check.out / f"{step}.log", "w") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            start_wall, start = time.time(), time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=project, stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, "TQDM_DISABLE": "1"})  # fmt: skip
            while proc.poll() is None and time.perf_counter() - start < cap:
                time.sleep(1.0)
                for _gen, (mtime, m) in sorted(_metrics(project, "eval").items()):
                    for name, hit in _reached(m, sims).items():
                        if hit and name not in first:
                            first[name] = round(mtime - start_wall, 1)
                if watch and len(first) == 2:
                    break
            stopped = proc.poll() is None
            if stopped:  # its cap, or both targets: Ctrl-C, as a person would
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=STOP_S * 0.6)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        util = sampler.stop()
        rows = generation_rows(project, start_wall, sims)
    last = rows[-1] if rows else {}
    ok = (proc.returncode == 0 or stopped) and bool(rows)
    table = ["| generation | s since start | self-play s | compile s | train s | evaluate s | "
             "solver.acc | " + " | ".join(f"{s} MCTS-{sims} weak" for s in PUBLIC_SETS) + " |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        cells = [r["generation"], r["since_start_s"], r["selfplay_s"], r["compile_s"],
                 r["train_s"], r["evaluate_s"], r["solver_acc"],
                 *(r[f"weak_{s}"] for s in PUBLIC_SETS)]  # fmt: skip
        table.append("| " + " | ".join("-" if c is None else _fmt(c) for c in cells) + " |")
    check.record(
        step, ok, time.perf_counter() - start, cap_s=round(cap), generations=len(rows),
        stopped_at_cap=stopped and len(first) < 2, seconds_to_acc=first.get("acc"),
        seconds_to_pons=first.get("pons"), last_solver_acc=last.get("solver_acc"),
        first_generation_s=rows[0]["since_start_s"] if rows else None,
        per_generation=rows, **util, table=table,
    )  # fmt: skip


def step_tests(check: Check, cuda: bool) -> None:
    if not cuda:
        check.record("cuda_tests", True, 0.0, skipped="no CUDA")
        return
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
           *CUDA_TESTS]  # fmt: skip
    ok, seconds, _ = check.run("cuda_tests", cmd, check.cap("cuda_tests"))
    check.record("cuda_tests", ok, seconds, cuda=cuda)


def step_compiled(check: Check, args: list[str], backend: str) -> None:
    """The compiled cell, cold then warm, with one fresh inductor cache."""
    with tempfile.TemporaryDirectory(prefix="inductor_") as cache:
        env = {"TORCHINDUCTOR_CACHE_DIR": cache}
        for run in ("cold", "warm"):
            cap = check.cap("bench_compiled") if run == "cold" else check.left() - STOP_S
            if cap < 5:
                check.record(f"bench_compiled_{run}", False, 0.0, skipped="no time left")
                continue
            _bench(check, f"bench_compiled_{run}", [*args, "--ways", "compiled", "--compile",
                                                   backend], cap, env=env)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/gpu_check.sh", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, help="folder for the results (created)")
    parser.add_argument("--tiny", action="store_true", help="smoke sizes, any device (CI)")
    parser.add_argument("--budget", type=float, default=540.0,
                        help="seconds the whole check may take (default 540)")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None,
                        help="make the time-to-target run's project copy in this new folder "
                        "and keep it (default: a temporary folder, removed)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.budget < MIN_BUDGET:
        parser.error(f"--budget {args.budget:g}: at least {MIN_BUDGET:g} seconds")
    check = Check(args.out.resolve(), args.budget)
    if args.tiny:  # the plan's caps, at the start, fit the budget with their stop margins
        caps, left = {}, args.budget
        for step in STEPS:
            caps[step] = round(plan(left, step), 1)
            left -= caps[step] + STOP_S
        check.record("plan", left >= -1e-6 and all(c >= 1 for c in caps.values()), 0.0,
                     budget=args.budget, caps=caps)  # fmt: skip
    cuda = step_env(check)
    device = "cuda" if cuda else "cpu"
    if args.tiny:
        tiny = {**TINY, **{f"{s}.node.device": device for s in ("selfplay", "train", "evaluate")}}
        step_run(check, "time_to_target", tiny, sims=2, watch=False, keep=args.keep)
        cells = ["selfplay", "--quick", "--sizes", "32"]
        _bench(check, "bench_eager", [*cells, "--ways", "host_sync,device"],
               check.cap("bench_eager"))  # fmt: skip
        step_tests(check, cuda)
        step_compiled(check, cells, "inductor" if cuda else "eager")
    else:
        step_run(check, "time_to_target", {"evaluate.benchmark.sims": [600]}, sims=600,
                 watch=True, keep=args.keep)  # fmt: skip
        recipe = ["--model", RECIPE["model"], "--sims", RECIPE["sims"]]
        _bench(check, "bench_eager", ["selfplay", "--sizes", "16384,65536", *recipe, "--ways",
                                      "host_sync,device"], check.cap("bench_eager"))  # fmt: skip
        step_tests(check, cuda)
        step_compiled(check, ["selfplay", "--sizes", "16384", *recipe], "inductor")
    total = time.perf_counter() - check.start
    print(f"gpu_check: {total:.0f} s of a {args.budget:.0f} s budget; {args.out / 'summary.md'}")
    return 0 if all(r["ok"] for r in check.rows if "skipped" not in r) else 1


if __name__ == "__main__":
    sys.exit(main())

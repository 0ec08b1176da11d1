"""The first run on a machine with an NVIDIA GPU, in one command (docs/gpu.md).

    scripts/gpu_check.sh OUT [--cap-minutes 8] [--sizes 512,16384,65536]
    scripts/gpu_check.sh OUT --tiny      # the same steps on the CPU at tiny sizes (CI)

Each step writes its raw output under ``OUT`` and one JSON line to ``OUT/results.jsonl``
(``{"step", "ok", "seconds", ...figures}``); ``OUT/summary.md`` is the Markdown table
of all of them, written again after every step (a step that hangs leaves the others'
figures). A failed step does not stop the others; the exit status is 1 if any failed.

Steps:

1. ``env``: Python, torch, CUDA, the GPU (``nvidia-smi -L``).
2. ``cuda_tests``: ``pytest -m gpu`` (the CUDA tests; they skip without CUDA).
3. ``bench_selfplay``: ``bench selfplay`` eager against compiled, B up to 65,536, 16 and
   64 simulations, while ``nvidia-smi`` samples GPU utilisation every 0.5 s.
4. ``bench_train``: ``bench train`` on the GPU.
5. ``kedro_tiny``: one tiny ``kedro run --env gpu`` end to end, in a copy of the project
   under ``OUT`` (the checkout's data and MLflow store are not touched).
6. ``time_to_target``: ``kedro run --env gpu`` with the public sets scored by MCTS-600
   every generation, watched until ``solver.acc`` >= 0.85 and MCTS-600 makes <= 0.5% weak
   mistakes on both public Pons sets, or ``--cap-minutes``; then stopped.

``--tiny`` runs the steps at smoke sizes on any device (the benchmark's eager cells; without
CUDA the CUDA tests and ``bench train`` are skipped) and joins 5 and 6 into one tiny
run of a single generation (the targets are then not reached: the check is that the
watch reads a generation's metrics).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CUDA_TESTS = ["tests/core/test_mcts.py", "tests/core/test_compiled.py"]  # the `gpu`-marked ones
TARGET_ACC = 0.85
TARGET_WEAK = 0.005
PUBLIC_SETS = ("Test_L3_R1", "Test_L2_R1")
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
    "evaluate.mcts.sims": 2,
    "evaluate.previous.num_games": 2,
    "evaluate.previous.mcts.sims": 2,
    "evaluate.benchmark.sims": [2],
}


def params_arg(params: dict) -> str:
    """``--params`` text of a flat mapping (lists as ``[a,b]``)."""

    def text(v) -> str:
        if isinstance(v, list):
            return "[" + ",".join(map(str, v)) + "]"
        return str(v)

    return ",".join(f"{k}={text(v)}" for k, v in params.items())


class Check:
    def __init__(self, out: Path):
        self.out = out
        self.rows: list[dict] = []
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.jsonl").write_text("")

    def record(self, step: str, ok: bool, seconds: float, **figures) -> None:
        row = {"step": step, "ok": ok, "seconds": round(seconds, 1), **figures}
        self.rows.append(row)
        with open(self.out / "results.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        self.summary()
        print(f"gpu_check: {step}: {'ok' if ok else 'FAILED'} in {seconds:.0f} s", flush=True)

    def run(self, step: str, cmd: list[str], timeout: float, cwd: Path = REPO, env=None):
        """Run ``cmd``, its output to ``OUT/<step>.log``; returns ``(ok, seconds, stdout)``."""
        start = time.perf_counter()
        log = self.out / f"{step}.log"
        try:
            res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                                 env={**os.environ, **(env or {})})  # fmt: skip
            ok, stdout, stderr = res.returncode == 0, res.stdout, res.stderr
        except subprocess.TimeoutExpired as exc:
            ok, stdout = False, _text(exc.stdout)
            stderr = _text(exc.stderr) + f"\ntimed out after {timeout:.0f} s"
        log.write_text(f"$ {' '.join(cmd)}\n{stdout}\n--- stderr ---\n{stderr}")
        return ok, time.perf_counter() - start, stdout

    def summary(self) -> None:
        lines = ["| step | ok | seconds | figures |", "|---|---|---|---|"]
        for row in self.rows:
            figs = ", ".join(f"{k} {_fmt(v)}" for k, v in row.items()
                             if k not in ("step", "ok", "seconds", "table"))  # fmt: skip
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
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    info = json.loads(res.stdout) if res.returncode == 0 else {"error": res.stderr[-500:]}
    smi = shutil.which("nvidia-smi")
    if smi:
        info["nvidia_smi"] = subprocess.run(
            [smi, "-L"], capture_output=True, text=True
        ).stdout.strip()
    info["python"] = sys.version.split()[0]
    check.record("env", res.returncode == 0, time.perf_counter() - start, **info)
    return bool(info.get("cuda_available"))


def _bench(check: Check, step: str, args: list[str], timeout: float) -> list[dict]:
    sampler = _GpuSampler(check.out / f"{step}_gpu.csv")
    try:
        ok, seconds, stdout = check.run(step, [sys.executable, "-m", "connect_zero_pipeline",
                                               "bench", *args], timeout)  # fmt: skip
    finally:
        util = sampler.stop()
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    (check.out / f"{step}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    figures = {"lines": len(lines), **util}
    check.record(step, ok and bool(lines), seconds, **figures, table=_bench_table(lines))
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
    """``nvidia-smi`` utilisation samples every 0.5 s while a step runs (none without it)."""

    def __init__(self, path: Path):
        smi = shutil.which("nvidia-smi")
        self.path, self.proc = path, None
        if smi:
            self.file = open(path, "w")  # noqa: SIM115 (closed by stop())
            self.proc = subprocess.Popen(
                [smi, "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits",
                 "-lms", "500"], stdout=self.file, stderr=subprocess.DEVNULL)  # fmt: skip

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        self.proc.wait()
        self.file.close()
        rows = [r.split(",") for r in self.path.read_text().splitlines() if r.strip()]
        util = [float(r[0]) for r in rows if r[0].strip().replace(".", "").isdigit()]
        mem = [float(r[1]) for r in rows if len(r) > 1 and r[1].strip().replace(".", "").isdigit()]
        if not util:
            return {}
        busy = [u for u in util if u > 0]
        return {"gpu_util_mean": sum(util) / len(util), "gpu_util_busy_mean":
                sum(busy) / max(len(busy), 1), "gpu_mem_max_mib": max(mem, default=0.0)}  # fmt: skip


def project_copy(dest: Path) -> Path:
    """A copy of the project's conf/, data skeleton and public sets: runs write there."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
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


def _generation_metrics(project: Path) -> dict[int, tuple[float, dict]]:
    """``{generation: (mtime, evaluate metrics)}`` of the run in ``project`` so far."""
    found = {}
    for path in (project / "data/08_reporting").glob("gen_*/eval_metrics.json/*/eval_metrics.json"):
        gen = int(path.parts[-4].split("_")[1])
        try:
            found[gen] = (path.stat().st_mtime, json.loads(path.read_text()))
        except (OSError, ValueError):  # being written
            continue
    return found


def _reached(metrics: dict, sims: int) -> dict:
    weak = {s: metrics.get(f"bench.{s}.mcts{sims}.weak_mistake_rate") for s in PUBLIC_SETS}
    return {
        "acc": metrics.get("solver.acc", 0.0) >= TARGET_ACC,
        "pons": all(w is not None and w <= TARGET_WEAK for w in weak.values()),
        "weak": weak,
    }


def _watch(proc, project: Path, start_wall: float, cap_s: float, sims: int, watch: bool):
    """Poll the run's evaluation files until it ends, the cap, or (``watch``) both targets;
    returns ``{"acc" | "pons": seconds from the start to the first generation reaching it}``."""
    first: dict[str, float] = {}
    deadline = time.perf_counter() + cap_s
    while proc.poll() is None and time.perf_counter() < deadline:
        time.sleep(2.0)
        for _gen, (mtime, metrics) in sorted(_generation_metrics(project).items()):
            hit = _reached(metrics, sims)
            for name in ("acc", "pons"):
                if hit[name] and name not in first:
                    first[name] = mtime - start_wall
        if watch and len(first) == 2:
            break
    return first


def step_run(check: Check, step: str, params: dict, cap_s: float, sims: int, watch: bool) -> None:
    """``kedro run --env gpu`` in a project copy; with ``watch``, stopped when both targets
    are reached (the time to each is the generation's evaluation file's time)."""
    project = project_copy(check.out / step)
    cmd = [str(Path(sys.executable).with_name("kedro")), "run", "--env", "gpu",
           "--params", params_arg(params)]  # fmt: skip
    with open(check.out / f"{step}.log", "w") as log:
        start_wall = time.time()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=project, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "TQDM_DISABLE": "1"})  # fmt: skip
        first = _watch(proc, project, start_wall, cap_s, sims, watch)
        stopped = proc.poll() is None
        if stopped:  # the targets reached, or the cap: Ctrl-C, as a person would
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    gens = _generation_metrics(project)
    last = gens[max(gens)][1] if gens else {}
    ok = (proc.returncode == 0 or stopped) and bool(gens)
    table = ["| generation | s since start | solver.acc | " + " | ".join(
        f"{s} MCTS-{sims} weak" for s in PUBLIC_SETS) + " |", "|---|---|---|---|---|"]  # fmt: skip
    for gen, (mtime, m) in sorted(gens.items()):
        weak = _reached(m, sims)["weak"]
        table.append(f"| {gen} | {mtime - start_wall:.0f} | {m.get('solver.acc', float('nan')):.3f} | "
                     + " | ".join(_fmt(weak[s]) for s in PUBLIC_SETS) + " |")  # fmt: skip
    check.record(
        step, ok, time.perf_counter() - start,
        generations=len(gens), stopped_at_cap=stopped and len(first) < 2,
        seconds_to_acc=first.get("acc"), seconds_to_pons=first.get("pons"),
        last_solver_acc=last.get("solver.acc"), table=table,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/gpu_check.sh", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, help="folder for the results (created)")
    parser.add_argument("--tiny", action="store_true", help="smoke sizes, any device (CI)")
    parser.add_argument(
        "--cap-minutes",
        type=float,
        default=8.0,
        help="time-to-target run: stop after this long (default 8)",
    )
    parser.add_argument("--sizes", default="512,16384,65536", help="bench selfplay batches")
    args = parser.parse_args(argv)
    check = Check(args.out.resolve())
    cuda = step_env(check)
    if cuda or not args.tiny:
        ok, seconds, _ = check.run("cuda_tests", [sys.executable, "-m", "pytest", "-m", "gpu",
                                                  "-q", "-p", "no:cacheprovider", *CUDA_TESTS],
                                   600)  # fmt: skip
        check.record("cuda_tests", ok, seconds, cuda=cuda)
    else:  # --tiny without a GPU: the CUDA parts are skipped
        check.record("cuda_tests", True, 0.0, skipped="no CUDA")
    if args.tiny:
        # The compiled cells have their own test (tests/bench): here the step's plumbing.
        _bench(check, "bench_selfplay", ["selfplay", "--quick", "--sizes", "32",
                                          "--compile", "off"], 600)  # fmt: skip
        if cuda:
            _bench(check, "bench_train", ["train", "--quick"], 600)
        else:
            check.record("bench_train", True, 0.0, skipped="no CUDA")
        device = "cuda" if cuda else "cpu"
        tiny = {**TINY, **{f"{s}.node.device": device for s in ("selfplay", "train", "evaluate")},
                "selfplay.node.compile": "on" if cuda else "eager"}  # fmt: skip
        step_run(check, "time_to_target", tiny, 600, sims=2, watch=False)
    else:
        _bench(check, "bench_selfplay", ["selfplay", "--sizes", args.sizes, "--sims", "16,64"], 900)
        _bench(check, "bench_train", ["train"], 600)
        step_run(check, "kedro_tiny", {**TINY, "selfplay.node.compile": "on"}, 600, sims=2,
                 watch=False)  # fmt: skip
        step_run(check, "time_to_target", {"evaluate.benchmark.sims": [600]},
                 args.cap_minutes * 60, sims=600, watch=True)  # fmt: skip
    print(f"gpu_check: {args.out / 'summary.md'}")
    return 0 if all(r["ok"] for r in check.rows) else 1


if __name__ == "__main__":
    sys.exit(main())

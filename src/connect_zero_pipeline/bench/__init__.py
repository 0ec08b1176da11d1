"""Benchmarks: ``python -m connect_zero_pipeline bench NAME [options]``.

Each benchmark prints one JSON line per figure with at least ``bench``,
``figure`` and ``value``; where a baseline is measured in the same process the
line also has ``baseline_value`` and ``ratio``, because this machine is shared
and absolute times drift. Benchmarks are not tests: they print, never assert.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable, Iterator

# name -> "module:function"; each function takes the parsed args and yields figure dicts.
BENCHES = {
    "engine": "connect_zero_pipeline.bench.engine:run",
    "solver": "connect_zero_pipeline.bench.solver:run",
    "mcts": "connect_zero_pipeline.bench.mcts:run",
    "train": "connect_zero_pipeline.bench.train:run",
    "onnx": "connect_zero_pipeline.bench.onnx:run",
    "scale": "connect_zero_pipeline.bench.scale:run",
    "pool": "connect_zero_pipeline.bench.pool:run",
    "selfplay": "connect_zero_pipeline.bench.selfplay:run",
    "compile": "connect_zero_pipeline.bench.compile:run",
    "verdicts": "connect_zero_pipeline.bench.verdicts:run",
}


def figure(bench: str, name: str, value: float, baseline: float | None = None, **extra) -> dict:
    """One benchmark line; ``ratio = value / baseline`` when a baseline is given."""
    line = {"bench": bench, "figure": name, "value": value}
    if baseline is not None:
        line["baseline_value"] = baseline
        line["ratio"] = value / baseline if baseline else float("inf")
    line.update(extra)
    return line


def best_rate(fn: Callable[[], int], repeats: int = 3, min_seconds: float = 0.5) -> float:
    """Best of ``repeats`` measurements of ``units / second``; ``fn`` returns its unit count."""
    best = 0.0
    for _ in range(repeats):
        units, start = 0, time.perf_counter()
        while True:
            units += fn()
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = max(best, units / elapsed)
    return best


def _load(name: str) -> Callable[[argparse.Namespace], Iterator[dict]]:
    module, func = BENCHES[name].split(":")
    return getattr(importlib.import_module(module), func)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m connect_zero_pipeline bench")
    parser.add_argument("name", choices=[*BENCHES, "all"], help="which benchmark to run")
    parser.add_argument("--file", help="input file (solver: a Pons benchmark file)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--model", help="selfplay: the network preset (default: tiny)")
    parser.add_argument(
        "--sizes", help="selfplay: batch sizes, e.g. 512,4096 (default: by --quick)"
    )
    parser.add_argument("--sims", help="selfplay: simulation counts, e.g. 16,64")
    parser.add_argument(
        "--compile",
        default="inductor",
        help="selfplay: the compiled cells' torch.compile backend (inductor; eager or "
        "aot_eager trace only; off skips them)",
    )
    parser.add_argument(
        "--generated",
        action="store_true",
        help="solver: also time generated positions of Pons' classes L2_R2 and L1_R1",
    )
    parser.add_argument("--moves", help="verdicts: the game to analyse (default 44533212)")
    parser.add_argument("--nodes", type=int, help="verdicts: the node budget a column")
    args = parser.parse_args(argv)
    names = list(BENCHES) if args.name == "all" else [args.name]
    for name in names:
        try:
            fn = _load(name)
        except ModuleNotFoundError as exc:
            print(json.dumps({"bench": name, "error": f"not available: {exc}"}), flush=True)
            continue
        for line in fn(args):
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

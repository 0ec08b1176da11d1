"""``bench onnx``: onnxruntime vs torch CPU inference on the same model and boards.

For each preset (``tiny``, the recipe's default model, and ``small``), thread
count (1 and 2, this machine's cores) and batch size (1 and 1024) it prints
onnxruntime's positions/s with torch's as the baseline (``ratio`` = ORT /
torch; target >= 1), then the max abs difference of logits and values on
1,024 random legal positions (target <= 1e-4). First, per preset, the seconds of its
export (``export_s``): its architecture traced by the dynamo exporter in this process (the
first preset's also imports the exporter); ``again_s``: another model of the same
architecture (its weights in the traced graph); ``new_process_s``: the export call in a new
process whose graph folder holds the architecture already (onnx and onnxscript imported by
the call), what a run's export costs once its architecture was exported on the machine
(``export.graph_cache``; target <= 2 s). Then ``inference_export_s``: the graph a search's
onnxruntime session is built from (``core.inference.onnx_bytes_for_inference``, the
TorchScript exporter, made for every model a process searches with), its first call in the
process (``first_s``) and the next, with ``again_s`` of the dynamo exporter as the baseline:
why searches keep the older exporter (``ratio`` < 1, and no trace per process).

Fair settings: both get the same number of intra-op threads (each line says
how many); torch runs in ``eval()`` + ``inference_mode``; onnxruntime runs
with all graph optimisations (BatchNorm is already folded by the exporter),
sequential execution, one inter-op thread and no spinning, so that its idle
workers do not steal the cores from torch's turn. The two are measured in
alternation (best of 3 rounds) so that drift on the shared machine hits both.
Inputs are prepared once, outside the timed loops.

Why two thread counts: on a shared, oversubscribed CPU torch's OpenMP
barriers make 2 threads far slower than 1 for small batches, so a single
setting would be unfair to one side.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from ..core.export import export_onnx, ort_evaluate, ort_session, parity_report, random_positions
from ..core.inference import onnx_bytes_for_inference
from ..core.models import build_model
from . import best_rate, figure

PRESETS = ("tiny", "small")
BATCHES = (1, 1024)
THREADS = (1, 2)


def _torch_fn(model: torch.nn.Module, boards: torch.Tensor):
    def run() -> int:
        with torch.inference_mode():
            model(boards)
        return boards.shape[0]

    return run


def _ort_fn(session, boards_np):
    def run() -> int:
        ort_evaluate(session, boards_np)
        return boards_np.shape[0]

    return run


def _new_process_export(preset: str, graphs: str) -> float:
    """The seconds of ``export_onnx`` in a new Python process, ``graphs`` holding the preset's
    architecture (the call's imports of onnx and onnxscript included, not torch's)."""
    code = ("import sys, time, torch; from pathlib import Path; "
            "from connect_zero_pipeline.core.models import build_model; "
            "from connect_zero_pipeline.core.export import export_onnx; "
            "m = build_model(sys.argv[1]).eval(); t = time.perf_counter(); "
            "export_onnx(m, graphs=Path(sys.argv[2])); print(time.perf_counter() - t)")  # fmt: skip
    res = subprocess.run([sys.executable, "-c", code, preset, graphs], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return float(res.stdout.strip().splitlines()[-1])


def run(args) -> Iterator[dict]:
    quick = getattr(args, "quick", False)
    rounds, min_seconds = (1, 0.2) if quick else (3, 0.5)
    old_threads = torch.get_num_threads()
    positions = random_positions(1024, seed=0)  # (1024, 6, 7) int8
    try:
        for preset in PRESETS:
            torch.manual_seed(0)
            model = build_model(preset).eval()
            with tempfile.TemporaryDirectory(prefix="onnx-graphs-") as graphs:
                start = time.perf_counter()
                export_onnx(model, graphs=Path(graphs))  # the architecture traced, kept
                traced = time.perf_counter() - start
                torch.manual_seed(1)
                other = build_model(preset).eval()
                start = time.perf_counter()
                data = export_onnx(other, graphs=Path(graphs))
                again = time.perf_counter() - start
                fresh = _new_process_export(preset, graphs)
            timed = []
            for _ in range(2):
                start = time.perf_counter()
                onnx_bytes_for_inference(other)
                timed.append(time.perf_counter() - start)
            model = other
            yield figure(
                "onnx",
                f"{preset}.export_s",
                traced,
                preset=preset,
                again_s=again,
                new_process_s=fresh,
                first_in_process=preset == PRESETS[0],
                target="new_process_s <= 2",
            )
            yield figure("onnx", f"{preset}.inference_export_s", timed[1], baseline=again,
                         baseline_name="dynamo_again_s", preset=preset, first_s=timed[0],
                         dynamo_new_process_s=fresh, target="ratio < 1")  # fmt: skip
            for threads in THREADS:
                torch.set_num_threads(threads)
                session = ort_session(data, threads=threads, spin=False)
                for batch in BATCHES:
                    boards = positions[:batch].contiguous()  # (batch, 6, 7)
                    ort_fn, torch_fn = _ort_fn(session, boards.numpy()), _torch_fn(model, boards)
                    ort_fn(), torch_fn()  # warm-up (allocations, lazy init)
                    ort_rate = torch_rate = 0.0
                    for _ in range(rounds):
                        ort_rate = max(ort_rate, best_rate(ort_fn, 1, min_seconds))
                        torch_rate = max(torch_rate, best_rate(torch_fn, 1, min_seconds))
                    yield figure(
                        "onnx",
                        f"{preset}.b{batch}.t{threads}.ort_positions_per_s",
                        ort_rate,
                        baseline=torch_rate,
                        baseline_name="torch_positions_per_s",
                        preset=preset,
                        batch=batch,
                        threads=threads,
                        target="ratio >= 1",
                    )
            report = parity_report(model, data, positions)
            yield figure(
                "onnx",
                f"{preset}.max_abs_diff",
                report.max_abs_diff,
                preset=preset,
                max_abs_diff_logits=report.max_abs_diff_logits,
                max_abs_diff_value=report.max_abs_diff_value,
                positions=report.num_positions,
                target="<= 1e-4",
            )
    finally:
        torch.set_num_threads(old_threads)

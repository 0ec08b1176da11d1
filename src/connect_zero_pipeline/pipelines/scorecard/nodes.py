"""Scorecard node: find the latest checkpoints on disk, measure them side by side."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from ...common.naming import ALGORITHMS, CHUNK, GENERATION, model_index
from ...core.device import resolve_device, torch_threads
from ...core.models import count_parameters
from ...core.scorecard import scorecard
from ...params.schema import parse_section

log = logging.getLogger(__name__)

# Partition ids of the versioned files below data/06_models and data/08_reporting, e.g.
# "gen_008/model.pt/2026-01-01T00.00.00.000Z/model" or
# "reinforce/rf_008/train_metrics.json/<version>/train_metrics" (the suffix is stripped).
_STEP = rf"(?P<name>(?P<kind>{GENERATION}|{CHUNK})_(?P<k>\d{{3,}}))"
_METRICS_ID = re.compile(
    rf"^(?:.+/)?{_STEP}/(?P<stage>\w+)_metrics\.json/(?P<v>[^/]+)/(?P=stage)_metrics$"
)
_ROWS = [(kind, ALGORITHMS[kind]) for kind in (CHUNK, GENERATION)]  # the baseline's row first
RUN_HINT = {kind: f"kedro run --pipelines={name}" for kind, name in ALGORITHMS.items()}
# Training wall time: the metrics of each chunk / generation that measure it.
WALL_TIME_KEYS = {
    CHUNK: [("train", "seconds")],
    GENERATION: [("selfplay", "seconds"), ("train", "train_seconds")],
}


def latest_checkpoint(
    partitions: Mapping[str, Callable[[], Any]], kind: str, name: str | None = None
) -> tuple[str, str, Callable[[], Any]]:
    """The checkpoint to score: ``(name, version, load)``.

    Args:
        partitions: partition id -> loader, from a ``PartitionedDataset`` over data/06_models.
        kind: ``rf`` (REINFORCE chunks) or ``gen`` (AlphaZero generations).
        name: a chunk / generation like ``gen_005``; ``None`` takes the highest
            number >= 1 found (number 0 is the untrained initial network).

    Raises:
        ValueError: nothing of that kind (or that name) is on disk, saying which run makes it.
    """
    found: dict[str, list[tuple[str, Callable]]] = {}
    for f in model_index(partitions, kind):
        if f.k >= 1:
            found.setdefault(f.name, []).append((f.version, partitions[f.pid]))
    label = ALGORITHMS[kind]
    if name is not None:
        if name not in found:
            raise ValueError(
                f"scorecard.{label} = {name!r}: no such {label} model on disk; "
                f"available: {sorted(found) or 'none'}"
            )
        chosen = name
    elif not found:
        raise ValueError(
            f"no {label} model to score: no {kind}_XXX/model.pt (XXX >= 1) under the model "
            f"folder. Train one first: `{RUN_HINT[kind]}`"
        )
    else:
        chosen = max(found, key=lambda n: int(n.split("_")[1]))
    version, load = max(found[chosen], key=lambda vl: vl[0])
    return chosen, version, load


def training_seconds(
    partitions: Mapping[str, Callable[[], Any]], kind: str, upto: int, version: str
) -> float:
    """Training wall time of chunks / generations 1..``upto`` of the run that made ``version``.

    A Kedro run saves every dataset under one version string, so for each
    chunk / generation the metric file of version ``version`` is taken, or the
    newest one before it (earlier chunks of a resumed run). REINFORCE:
    ``train.seconds`` (games and gradient steps); AlphaZero:
    ``selfplay.seconds + train.train_seconds``. Evaluation is excluded for both.
    NaN (with a warning) when a metric file is missing.
    """
    latest: dict[tuple[int, str], tuple[str, Callable]] = {}
    for pid, load in partitions.items():
        m = _METRICS_ID.match(pid)
        if m and m["kind"] == kind and m["v"] <= version:
            key = (int(m["k"]), m["stage"])
            if key not in latest or m["v"] > latest[key][0]:
                latest[key] = (m["v"], load)
    total = 0.0
    for k in range(1, upto + 1):
        for stage, metric in WALL_TIME_KEYS[kind]:
            if (k, stage) not in latest:
                log.warning(
                    "scorecard: no %s_%03d %s metrics up to version %s; wall time unknown",
                    kind,
                    k,
                    stage,
                    version,
                )
                return math.nan
            total += float(latest[(k, stage)][1]().get(metric, math.nan))
    return total


def build_scorecard(
    model_files: Mapping[str, Callable[[], Any]],
    metric_files: Mapping[str, Callable[[], Any]],
    positions: pd.DataFrame,
    params: dict,
) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """One row per algorithm: checkpoint, size, solver-set and RandomPunisher figures,
    the direct matches and the training wall time; and the same numbers as
    ``scorecard.<algorithm>.<metric>`` MLflow metrics.
    """
    cfg = parse_section("scorecard", params)
    device = resolve_device(cfg.node.device)
    picked = {}
    for kind, label in _ROWS:
        name, version, load = latest_checkpoint(model_files, kind, getattr(cfg, label))
        picked[label] = (name, version, load())
        log.info("scorecard: %s = %s (version %s)", label, name, version)
    with torch_threads(cfg.node.num_threads):
        results = scorecard(
            ("reinforce", picked["reinforce"][2]),
            ("alphazero", picked["alphazero"][2]),
            positions,
            cfg,
            device,
        )
    rows, metrics = [], {}
    for kind, label in _ROWS:
        name, version, model = picked[label]
        seconds = training_seconds(metric_files, kind, int(name.split("_")[1]), version)
        row = {
            "algorithm": label,
            "checkpoint": name,
            "version": version,
            "architecture": model.config.get("arch"),
            "parameters": count_parameters(model),
            **results[label],
            "train_wall_seconds": seconds,
        }
        rows.append(row)
        for key, value in row.items():
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                metrics[f"{label}.{key}"] = {"value": float(value), "step": 0}
    table = pd.DataFrame(rows)
    log.info("Scorecard:\n%s", _format(rows))
    return table, metrics


def _format(rows: list[dict[str, Any]]) -> str:
    """A narrow text table (metric, one column per algorithm) that survives log wrapping."""
    lines = [f"{'':<26}" + "".join(f"{r['algorithm']:>12}" for r in rows)]
    for key in _SHOWN:
        if all(key in r for r in rows):
            cells = [r[key] for r in rows]
            text = [f"{c:>12.3f}" if isinstance(c, float) else f"{c!s:>12}" for c in cells]
            lines.append(f"{key:<26}" + "".join(text))
    return "\n".join(lines)


_SHOWN = [
    "checkpoint",
    "architecture",
    "parameters",
    "solver.acc",
    "solver.ce",
    "punisher.policy.win_rate",
    "h2h.policy.win_rate",
    "h2h.policy.draw_rate",
    "h2h.mcts.win_rate",
    "h2h.mcts.draw_rate",
    "train_wall_seconds",
]

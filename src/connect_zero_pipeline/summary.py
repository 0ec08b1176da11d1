"""The end-of-run summary: how strong the run's last model is, where its files are, what next.

:class:`RunSummaryHook` runs after a pipeline completes. It reads everything
from the run's own outputs in the catalog (pinned to the run's version by
:mod:`.runs`, so a resumed run whose last nodes were skipped reads the same
files), prints the summary and logs it to the MLflow parent run as
``summary.md``. The text itself is :func:`render`, a pure function.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from kedro.framework.hooks import hook_impl

from .naming import EVAL_STAGE, GENERATION, parse_step, stage_of

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.md"

# Catalog outputs shown with their path, in this order.
OUTPUT_FILES = {
    "latest_model": "model",
    "onnx_model": "ONNX model",
    "play_page": "play page",
    "learning_curves": "learning curves",
    "reinforce_learning_curves": "learning curves",
    "scorecard": "scorecard",
    "ladder_ratings": "ladder ratings",
    "ladder_plot": "ladder plot",
}

# (metric key of the evaluate stage, label), for the last generation.
HEADLINE = [
    ("solver.acc", "solver.acc (network alone, strict)"),
    ("solver.weak_acc", "solver.weak_acc (keeps the best outcome class)"),
    ("punisher.policy.win_rate", "vs RandomPunisher, network alone (win rate)"),
    ("punisher.mcts.win_rate", "vs RandomPunisher, MCTS agent (win rate)"),
    ("gate.score", "vs the previous generation (score)"),
]

# (command, what it shows, what the run must have produced for it to apply)
NEXT_COMMANDS = [
    ("make mlflow", "the MLflow UI: runs, per-generation children, the model registry", None),
    ("make play", "play the model in the browser", "play page"),
    ("make play-cli", "play the model in the terminal", "model"),
    ("make viz", "the pipeline's lineage in kedro-viz", None),
    ("python -m connect_zero_pipeline curve", "the learning curve as a table", "generation"),
]


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min {secs} s" if hours else f"{minutes} min {secs} s"


def render(
    *,
    pipeline: str,
    run_id: str | None,
    wall_seconds: float,
    generation: tuple[str, dict[str, float]] | None,
    paths: dict[str, str],
    mlflow_run_id: str | None,
) -> str:
    """The summary as Markdown (it reads as plain text in a terminal).

    Args:
        pipeline: the pipeline's name.
        run_id: the run's id (its version of every output), if it has one.
        wall_seconds: this attempt's wall time.
        generation: the last generation's namespace and its evaluate metrics, if any.
        paths: label -> path of the run's output files.
        mlflow_run_id: the MLflow parent run.
    """
    lines = [f"## Run summary: {pipeline}", ""]
    if run_id:
        lines.append(f"- run id: `{run_id}` (every output of this run has this version)")
    lines.append(f"- wall time: {_duration(wall_seconds)}")
    if mlflow_run_id:
        lines.append(f"- MLflow run: `{mlflow_run_id}`")
    if generation is not None:
        name, metrics = generation
        kind = "generation" if parse_step(name)[0] == GENERATION else "chunk"
        lines += ["", f"### {name}, the last {kind}", ""]
        for key, label in HEADLINE:
            if key in metrics:
                lines.append(f"- {label}: {metrics[key]:.3f}")
        bench = sorted(k for k in metrics if k.startswith("bench."))
        for key in bench:
            lines.append(f"- {key}: {metrics[key]:.3f}")
    if paths:
        lines += ["", "### Files", ""]
        lines += [f"- {label}: `{path}`" for label, path in paths.items()]
    have = set(paths) | ({"generation"} if generation is not None else set())
    lines += ["", "### Next", ""]
    lines += [
        f"- `{command}`: {what}"
        for command, what, needs in NEXT_COMMANDS
        if needs is None or needs in have
    ]
    return "\n".join(lines) + "\n"


def _path(dataset) -> str | None:
    """The file a (pinned) catalog dataset reads, relative to the current folder if below it."""
    load_path = getattr(dataset, "_get_load_path", None)
    try:
        path = load_path() if load_path else getattr(dataset, "_filepath", None)
    except Exception:  # no version on disk (the node did not run)
        return None
    if path is None:
        return None
    path = Path(str(PurePosixPath(path)))
    if not path.exists():
        return None
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def last_generation(pipeline, catalog) -> tuple[str, dict[str, float]] | None:
    """The highest generation (or REINFORCE chunk) of ``pipeline`` with an evaluation-metrics
    output, and its metrics."""
    best = None
    for name in pipeline.all_outputs():
        namespace = name.rpartition(".")[0]
        step = parse_step(namespace)
        if step and stage_of(name) == EVAL_STAGE and (best is None or step[1] > best[0]):
            best = (step[1], namespace, name)
    if best is None:
        return None
    try:
        metrics = catalog.load(best[2])
    except Exception as exc:  # a failed run does not get here; say what is missing
        log.warning("No summary metrics: %s could not be read (%s)", best[2], exc)
        return None
    return best[1], {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}


class RunSummaryHook:
    """Prints and logs :func:`render` after a successful pipeline run."""

    def __init__(self, out=None) -> None:
        self._out = out
        self._start = time.perf_counter()
        self._run_id: str | None = None
        self._mlflow_run_id: str | None = None

    @hook_impl(trylast=True)  # after kedro-mlflow opened its run and the run id is known
    def before_pipeline_run(self) -> None:
        import mlflow

        from .runs import run_identity

        self._start = time.perf_counter()
        self._run_id = run_identity.run_id
        active = mlflow.active_run()
        self._mlflow_run_id = active.info.run_id if active else None

    @hook_impl
    def after_pipeline_run(self, run_params: dict[str, Any], pipeline, catalog) -> None:
        import mlflow

        from .naming import pipeline_label

        outputs = pipeline.all_outputs()
        paths = {}
        for name, label in OUTPUT_FILES.items():
            if name in outputs and (path := _path(catalog.get(name))) is not None:
                paths[label] = path
        text = render(
            pipeline=pipeline_label(run_params.get("pipeline_names")),
            run_id=self._run_id,
            wall_seconds=time.perf_counter() - self._start,
            generation=last_generation(pipeline, catalog),
            paths=paths,
            mlflow_run_id=self._mlflow_run_id,
        )
        print("\n" + text, file=self._out or sys.stdout, flush=True)
        if self._mlflow_run_id is not None:
            with tempfile.TemporaryDirectory() as tmp:
                file = Path(tmp) / SUMMARY_FILE
                file.write_text(text)
                mlflow.MlflowClient().log_artifact(self._mlflow_run_id, str(file))

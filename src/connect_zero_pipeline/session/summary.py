"""The end-of-run summary: how strong the run's last model is, where its files are, what next.

:class:`RunSummaryHook` runs after a pipeline completes. It reads the run's own figures
from its outputs in the catalog (pinned to the run's version by :mod:`.run.pinning`, so a
resumed run whose last nodes were skipped reads the same files); the one figure from
outside the run, the evaluation of the model a ``start_from`` run started from, it reads
from that run's metric file (:func:`.run.outputs.generation_metrics`). It prints the
summary and logs it to the MLflow parent run as ``summary.md``. The text itself is
:func:`render`, a pure function.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kedro.framework.hooks import hook_impl

from .. import web
from ..common.internals import load_path
from ..common.naming import (
    EVAL_STAGE,
    GENERATION,
    HEADLINE,
    METRICS_SUFFIX,
    NOTE_TAG,
    headline_line,
    parse_step,
    pipeline_label,
    stage_of,
)
from ..core.config import values
from ..core.config.evaluation import STRENGTH_BUCKETS, EvaluateConfig, full_scorecard
from ..core.ratings import ratings_table
from ..params.schema import SCHEMA, RunParams
from ..run.outputs import generation_metrics
from ..tracking.registry import CHAMPION, REGISTERED_MODEL, run_model_version
from ..tracking.store import MLFLOW_PORT, run_url, serving_port, sqlite_path

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.md"

REFERENCE = {"metric": "solver.acc", "value": 0.803, "normal": (0.793, 0.808)}
"""The default recipe's reference figure and its normal spread over seeds: the default run
of docs/results.md, on the shipped solver set (the one built with the opening book;
``tests/test_summary.py`` checks that the report says the same)."""
RECIPE_SECTIONS = ("alphazero", "model", "selfplay", "train", "evaluate")
"""The sections whose keys make the recipe (their ``node`` keys never change a figure)."""

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

# (command, what it shows, what the run must have produced for it to apply)
NEXT_COMMANDS = [
    ("make mlflow", "the MLflow UI: runs, per-generation children, the model registry", None),
    ("make play", "play the model in the browser", "play page"),
    ("make play-cli", "play the model in the terminal", "model"),
    ("make viz", "the pipeline's lineage in kedro-viz", None),
    (
        "python -m connect_zero_pipeline curve --run {run}",
        "the learning curve as a table",
        "generation",
    ),
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
    mlflow_url: str | None = None,
    mlflow_served: bool = False,
    registered: dict[str, Any] | None = None,
    recipe_changes: list[str] | None = None,
    ratings: list[str] | None = None,
    extended: list[dict[str, Any]] | None = None,
    earlier_seconds: float = 0.0,
    start: tuple[str, dict[str, float]] | None = None,
    scorecards: str | None = None,
) -> str:
    """The summary as Markdown (it reads as plain text in a terminal).

    Args:
        pipeline: the pipeline's name.
        run_id: the run's id (its version of every output), if it has one.
        wall_seconds: this attempt's wall time.
        generation: the last generation's namespace and its evaluate metrics, if any.
        paths: label -> path of the run's output files.
        mlflow_run_id: the MLflow parent run.
        mlflow_url: the parent run's page in the MLflow UI: the running server's, else the
            one ``make mlflow`` serves.
        mlflow_served: whether an MLflow UI serves the store at ``mlflow_url`` now (else the
            line says which command serves it).
        registered: the registry version this run made: ``name``, ``version``, ``champion``
            (whether it holds the alias) and ``champion_version``.
        recipe_changes: the recipe keys this run changed from the default (None: not an
            AlphaZero run), to say whether :data:`REFERENCE` applies.
        ratings: a ladder's ratings table (:func:`~.core.ratings.ratings_table`), if any.
        extended: the run's extensions (its manifest's ``extended``: ``from``, ``to``,
            ``version``), if it was trained further.
        earlier_seconds: the wall time of the run's earlier attempts (a resumed or extended
            run: those that recorded their end), shown with the run's total.
        start: the trained model the run started from (``model.start_from``), in words, and
            its evaluation metrics, shown beside the run's own.
        scorecards: which generations' scorecards were in full (:func:`scorecards_line`).
    """
    lines = [f"## Run summary: {pipeline}", ""]
    if run_id and extended:
        lines.append(f"- run id: `{run_id}` (the version of its generations' outputs; each "
                     "extension's final files have a version of their own)")  # fmt: skip
    elif run_id:
        lines.append(f"- run id: `{run_id}` (every output of this run has this version)")
    for step in extended or []:
        lines.append(f"- extended from {step['from']} to {step['to']} generations (its final "
                     f"files have version `{step['version']}`)")  # fmt: skip
    if start is not None:
        lines.append(f"- started from: {start[0]}")
    if earlier_seconds > 0:
        lines.append(f"- wall time: {_duration(wall_seconds)} this attempt, "
                     f"{_duration(earlier_seconds + wall_seconds)} in all")  # fmt: skip
    else:
        lines.append(f"- wall time: {_duration(wall_seconds)}")
    if mlflow_run_id:
        serves = "" if mlflow_served else " once `make mlflow` serves it"
        where = f" ({mlflow_url}{serves})" if mlflow_url else ""
        lines.append(f"- MLflow run: `{mlflow_run_id}`{where}")
    if registered:
        crown = (
            "the champion (`models:/{name}@champion`)".format(**registered)
            if registered["champion"]
            else f"not the champion (version {registered['champion_version']} is)"
        )
        lines.append(f"- registry: {registered['name']} version {registered['version']}, {crown}")
    if generation is not None:
        name, metrics = generation
        kind = "generation" if parse_step(name)[0] == GENERATION else "chunk"
        lines += ["", f"### {name}, the last {kind}", ""]
        before = start[1] if start is not None else {}
        for key, label in HEADLINE:
            if key in metrics:
                line = f"- {label}: {metrics[key]:.3f}"
                if key in before:
                    line += (f" (its start: {before[key]:.3f}, "
                             f"{metrics[key] - before[key]:+.3f})")  # fmt: skip
                lines.append(line)
        if (by_ply := by_ply_line(metrics)) is not None:
            lines.append(f"- {by_ply}")
        if recipe_changes is not None and REFERENCE["metric"] in metrics:
            lines.append(f"- {reference_line(metrics[REFERENCE['metric']], recipe_changes)}")
        if (times := time_line(metrics)) is not None:
            lines.append(f"- {times}")
        if scorecards is not None:
            lines.append(f"- {scorecards}")
        table = public_sets_table(metrics)
        if table:
            lines += ["", "Pons' public sets (strict accuracy / weak mistakes):", "", *table]
    if ratings:
        lines += ["", "### Ladder ratings (Elo)", "", *ratings]
    if paths:
        lines += ["", "### Files", ""]
        lines += [f"- {label}: `{path}`{_note(label, path)}" for label, path in paths.items()]
    have = set(paths) | ({"generation"} if generation is not None else set())
    lines += ["", "### Next", ""]
    lines += [
        f"- `{command.format(run=run_id)}`: {what}"
        for command, what, needs in NEXT_COMMANDS
        if (needs is None or needs in have) and not ("{run}" in command and run_id is None)
    ]
    return "\n".join(lines) + "\n"


def reference_line(value: float, recipe_changes: list[str]) -> str:
    """How ``value`` compares with the default recipe's reference (:data:`REFERENCE`)."""
    metric, ref, (low, high) = REFERENCE["metric"], REFERENCE["value"], REFERENCE["normal"]
    span, where = f"{low:.3f}-{high:.3f}", f"the reference run ends at {ref:.3f}; docs/results.md"
    if recipe_changes:
        shown = ", ".join(recipe_changes[:4]) + (", ..." if len(recipe_changes) > 4 else "")
        return (
            f"reference: this run changed the recipe ({shown}); "
            f"for the default recipe {metric} is normally {span} ({where})"
        )
    if low <= value <= high:
        verdict = "normal"
    else:
        verdict = ("above" if value > high else "below") + " normal"
    return f"reference: {metric} {value:.3f} is {verdict} for the default recipe ({span}; {where})"


def public_sets_table(metrics: dict[str, float]) -> list[str]:
    """``bench.<set>.<agent>.<metric>`` as a small Markdown table, a row per set."""
    cells: dict[str, dict[str, dict[str, float]]] = {}
    for key, value in metrics.items():
        parts = key.split(".")
        if len(parts) == 4 and parts[0] == "bench":
            cells.setdefault(parts[1], {}).setdefault(parts[2], {})[parts[3]] = value
    if not cells:
        return []
    agents = sorted({a for rows in cells.values() for a in rows}, key=_agent_order)
    lines = ["| set | " + " | ".join(agents) + " |", "|---|" + "---|" * len(agents)]
    for name, rows in cells.items():
        row = []
        for agent in agents:
            m = rows.get(agent, {})
            row.append(f"{m.get('strict_acc', float('nan')):.3f} / "
                       f"{m.get('weak_mistake_rate', float('nan')):.1%}")  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return lines


def _agent_order(agent: str) -> tuple[int, int]:
    return (0, 0) if agent == "network" else (1, int(agent.removeprefix("mcts") or 0))


def recipe_changes(sections: RunParams) -> list[str]:
    """The recipe keys (:data:`RECIPE_SECTIONS`, ``node`` keys aside) whose value in the
    run's sections (``RunContext.sections``) is not the default's."""
    changed = []
    for section in RECIPE_SECTIONS:
        now = values(getattr(sections, section))
        default = values(SCHEMA[section]())
        changed += [f"{section}.{k}" for k in now if not k.startswith("node.")
                    and now[k] != default.get(k)]  # fmt: skip
    return changed


def registered_version(client, mlflow_run_id: str) -> dict[str, Any] | None:
    """The version of the registered model that the run with MLflow parent ``mlflow_run_id``
    made, and whether it is the champion (None when it registered none)."""
    try:
        version = run_model_version(client, REGISTERED_MODEL, mlflow_run_id)
        if version is None:
            return None
        champion = client.get_model_version_by_alias(REGISTERED_MODEL, CHAMPION).version
    except Exception as exc:  # the registry is out of reach: the summary goes on without it
        log.warning("The summary names no registry version: %s", exc)
        return None
    return {"name": REGISTERED_MODEL, "version": version.version,
            "champion": str(champion) == str(version.version), "champion_version": champion}  # fmt: skip


def _ratings(catalog) -> list[str] | None:
    try:
        return ratings_table(catalog.load("ladder_ratings"))
    except Exception as exc:  # the summary goes on without it
        log.warning("No ratings in the summary: %s", exc)
        return None


def _note(label: str, path: str) -> str:
    """What a file line adds: a play page exported without onnxruntime-web says so."""
    page = label == OUTPUT_FILES["play_page"] and Path(path).is_dir()
    if page and not web.has_runtime(Path(path)):
        return f" (without onnxruntime-web, not fetched here: {web.WHOLE_LATER})"
    return ""


def _path(dataset) -> str | None:
    """The file a (pinned) catalog dataset reads, relative to the current folder if below it."""
    found = load_path(dataset)
    if found is None:
        return None
    path = Path(found)
    if not path.exists():
        return None
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


TIMES = (
    ("self-play", "selfplay.seconds"),
    ("compiling the search", "selfplay.compile_s"),
    ("training", "train.train_seconds"),
    ("evaluation", "evaluate.seconds"),
)
"""The stages of a generation the summary times (the compile is part of self-play)."""
ARITHMETIC = {"self-play": "selfplay.bfloat16", "training": "train.bfloat16"}
"""The stages whose metrics say whether their network computed in bfloat16 (``precision``)."""


def by_ply_line(metrics: dict[str, float]) -> str | None:
    """Where the network is weak: ``by ply (network alone on the solver set, strict / weak
    mistakes): 0-6 0.712 / 9.8%, 7-12 ...`` over :data:`~.core.config.evaluation.STRENGTH_BUCKETS`,
    the opening first; None without them."""
    parts = []
    for bucket, (lo, hi) in STRENGTH_BUCKETS.items():
        strict, weak = (
            metrics.get(f"solver.acc_{bucket}"),
            metrics.get(f"solver.weak_acc_{bucket}"),
        )
        if strict is not None and weak is not None:
            parts.append(f"{lo}-{hi} {strict:.3f} / {1 - weak:.1%}")
    if not parts:
        return None
    return "by ply (network alone on the solver set, strict / weak mistakes): " + ", ".join(parts)


def scorecards_line(config: EvaluateConfig, num_generations: int) -> str:
    """Which generations' scorecards were in full (their games and searches), by
    :func:`~.core.config.evaluation.full_scorecard`."""
    full = [k for k in range(1, num_generations + 1)
            if full_scorecard(config, k, num_generations)]  # fmt: skip
    if len(full) == num_generations:
        return "scorecards: every generation's in full"
    return (f"scorecards: in full at generations {', '.join(map(str, full))} (evaluate.full_every "
            f"{config.full_every}, and the last); the others scored the solver set alone")  # fmt: skip


def time_line(metrics: dict[str, float]) -> str | None:
    """``time: self-play 12 s in float32 (compiling the search 3 s), training 20 s in
    bfloat16, evaluation 5 s``: the arithmetic of self-play's and training's networks too
    (their ``precision``), where their metrics say it (:data:`ARITHMETIC`)."""
    have = {label: metrics[key] for label, key in TIMES if key in metrics}
    if not have:
        return None
    parts = []
    for label, seconds in have.items():
        if label == "compiling the search" and parts:
            parts[-1] += f" ({label} {seconds:.0f} s)"
        else:
            parts.append(f"{label} {seconds:.0f} s")
        if ARITHMETIC.get(label) in metrics:
            parts[-1] += " in bfloat16" if metrics[ARITHMETIC[label]] else " in float32"
    return "time: " + ", ".join(parts)


def last_generation(pipeline, catalog) -> tuple[str, dict[str, float]] | None:
    """The highest generation (or REINFORCE chunk) of ``pipeline`` with an evaluation-metrics
    output, and its metrics, with its other stages' metrics under their stage's prefix
    (``selfplay.seconds``)."""
    best = None
    for name in pipeline.all_outputs():
        namespace = name.rpartition(".")[0]
        step = parse_step(namespace)
        if step and stage_of(name) == EVAL_STAGE and (best is None or step[1] > best[0]):
            best = (step[1], namespace, name)
    if best is None:
        return None
    try:
        metrics = _float_metrics(catalog.load(best[2]))
    except Exception as exc:  # a failed run does not get here; say what is missing
        log.warning("No summary metrics: %s could not be read (%s)", best[2], exc)
        return None
    outputs = pipeline.all_outputs()
    for stage in ("selfplay", "train"):
        name = f"{best[1]}.{stage}{METRICS_SUFFIX}"
        if name in outputs:
            metrics.update(
                {f"{stage}.{k}": v for k, v in _float_metrics(catalog.load(name)).items()}
            )
    return best[1], metrics


def _float_metrics(metrics: dict[str, Any] | None) -> dict[str, float]:
    return {k: float(v) for k, v in (metrics or {}).items() if isinstance(v, (int, float))}


class RunSummaryHook:
    """Prints and logs :func:`render` after a successful pipeline run. Registered by the
    session for its run, with the run's :class:`.run_life.RunLife`."""

    def __init__(self, life, out=None) -> None:
        self._life = life
        self._out = out
        self._start = time.perf_counter()
        self._mlflow_run_id: str | None = None

    @hook_impl(trylast=True)  # after kedro-mlflow opened its run
    def before_pipeline_run(self) -> None:
        import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

        self._start = time.perf_counter()
        active = mlflow.active_run()
        self._mlflow_run_id = active.info.run_id if active else None

    def _start_metrics(self) -> tuple[str, dict[str, float]] | None:
        """What the run started from and that generation's evaluation metrics (read from its
        metrics file; none if that run's files are not in this project)."""
        run = self._life.context
        start = run.manifest.get("start_from")
        if not start:
            return None

        found = generation_metrics(run.root, start["generation"], "eval", start["run_id"])
        return start["described"], _float_metrics(found)

    @hook_impl
    def after_pipeline_run(self, run_params: dict[str, Any], pipeline, catalog) -> None:
        import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

        run = self._life.context
        manifest = run.manifest  # planned and written before the first node (RunLife)

        outputs = pipeline.all_outputs()
        paths = {}
        for name, label in OUTPUT_FILES.items():
            if name in outputs and (path := _path(catalog.get(name))) is not None:
                paths[label] = path
        generation = last_generation(pipeline, catalog)
        client = mlflow.MlflowClient() if self._mlflow_run_id is not None else None
        url, port = None, None
        if client is not None:
            experiment = client.get_run(self._mlflow_run_id).info.experiment_id
            store = sqlite_path(mlflow.get_tracking_uri())
            port = serving_port(store) if store is not None else None
            url = run_url(experiment, self._mlflow_run_id, port or MLFLOW_PORT)
        is_alphazero = generation is not None and parse_step(generation[0])[0] == GENERATION
        text = render(
            pipeline=pipeline_label(run_params.get("pipeline_names")),
            run_id=run.run_id,
            wall_seconds=time.perf_counter() - self._start,
            generation=generation,
            paths=paths,
            mlflow_run_id=self._mlflow_run_id,
            mlflow_url=url,
            mlflow_served=port is not None,
            registered=registered_version(client, self._mlflow_run_id)
            if client is not None and "onnx_model_mlflow" in outputs
            else None,
            recipe_changes=recipe_changes(run.sections) if is_alphazero else None,
            ratings=_ratings(catalog) if "ladder_ratings" in outputs else None,
            extended=manifest.get("extended"),
            earlier_seconds=manifest.get("wall_seconds") or 0.0,
            start=self._start_metrics(),
            scorecards=scorecards_line(run.sections.evaluate, run.sections.alphazero.num_generations)
            if is_alphazero else None,
        )  # fmt: skip
        print("\n" + text, file=self._out or sys.stdout, flush=True)
        if client is not None:  # the description: its first lines are what MLflow shows
            first = f"{generation[0]}: {headline_line(generation[1])}\n\n" if generation else ""
            client.set_tag(self._mlflow_run_id, NOTE_TAG, first + text)
            with tempfile.TemporaryDirectory() as tmp:
                file = Path(tmp) / SUMMARY_FILE
                file.write_text(text)
                client.log_artifact(self._mlflow_run_id, str(file))

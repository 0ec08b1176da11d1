"""Names shared by the pipelines, the hooks and the commands: one place for each.

Namespaces. The AlphaZero loop and the REINFORCE loop are unrolled into the
DAG; step ``k`` of each lives in a namespace of its own:

- ``gen_001``, ``gen_002``, ...: AlphaZero generations (``gen_000`` is the
  initial network);
- ``rf_001``, ``rf_002``, ...: REINFORCE chunks (``rf_000`` is the initial policy).

Outputs. A namespace's metrics are the dict outputs whose name ends in
``_metrics`` (``selfplay_metrics``, ``train_metrics``, ``eval_metrics``); in
MLflow their keys take the stage as a prefix (``train.loss``), except the
evaluation's, which are logged as they are (``solver.acc``). Its networks are
the outputs named in :data:`MODEL_OUTPUTS`, and a pipeline's learning-curve
figure ends in :data:`LEARNING_CURVES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

GENERATION = "gen"
"""Namespace prefix of AlphaZero generations."""
CHUNK = "rf"
"""Namespace prefix of REINFORCE chunks."""
ALGORITHMS = {GENERATION: "alphazero", CHUNK: "reinforce"}
"""Namespace prefix -> the pipeline that makes it."""

NAMESPACE = re.compile(rf"^(?P<kind>{GENERATION}|{CHUNK})_(?P<k>\d{{3,}})$")
"""A step namespace: ``gen_005`` or ``rf_012`` (group ``kind`` and number ``k``)."""

METRICS_SUFFIX = "_metrics"
"""Dict outputs logged as metrics: ``<stage>_metrics``."""
EVAL_STAGE = "eval"
"""The evaluation stage of a generation or chunk (``gen_003.eval_metrics``)."""
UNPREFIXED_STAGES = (EVAL_STAGE,)
"""Stages whose metric keys are logged without the stage prefix (``solver.acc``)."""
SCORECARD_NODE = "evaluate"
"""The node that makes a step's scorecard (``gen_003.evaluate``, ``rf_002.evaluate``): off the
loop's path, and one at a time beside it (``session.runner.OverlapRunner``)."""
MODEL_OUTPUTS = ("model", "candidate")
"""Outputs of a step namespace that are networks (logged as MLflow artifacts)."""
LEARNING_CURVES = "learning_curves"
"""Suffix of a pipeline's learning-curve figure (``learning_curves``,
``reinforce_learning_curves``)."""


def step_name(kind: str, k: int) -> str:
    """Namespace of step ``k`` of ``kind`` (``gen`` or ``rf``): ``gen_007``, ``rf_012``."""
    if kind not in ALGORITHMS:
        raise ValueError(f"kind must be one of {sorted(ALGORITHMS)}, got {kind!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"step number must be an integer >= 0, got {k!r}")
    return f"{kind}_{k:03d}"


def generation_name(k: int) -> str:
    """Namespace of AlphaZero generation ``k``: ``gen_001`` ... (``gen_000``: the initial model)."""
    return step_name(GENERATION, k)


def chunk_name(k: int) -> str:
    """Namespace of REINFORCE chunk ``k``: ``rf_001`` ... (``rf_000``: the initial policy)."""
    return step_name(CHUNK, k)


def parse_step(namespace: str | None) -> tuple[str, int] | None:
    """``(kind, k)`` of a step namespace (``"gen_005" -> ("gen", 5)``), else None."""
    m = NAMESPACE.match(namespace or "")
    return (m["kind"], int(m["k"])) if m else None


def stage_of(output: str) -> str | None:
    """The stage of a metrics output (``gen_003.train_metrics -> "train"``), else None."""
    local = output.rsplit(".", 1)[-1]
    return local[: -len(METRICS_SUFFIX)] if local.endswith(METRICS_SUFFIX) else None


def metric_name(stage: str, key: str) -> str:
    """The MLflow metric name of ``key`` in a stage's metrics: ``train.loss``, ``solver.acc``."""
    return key if stage in UNPREFIXED_STAGES else f"{stage}.{key}"


HEADLINE = [
    ("solver.acc", "solver.acc (network alone, strict)"),
    ("solver.weak_acc", "solver.weak_acc (keeps the best outcome class)"),
    ("punisher.policy.win_rate", "vs RandomPunisher, network alone (win rate)"),
    ("punisher.mcts.win_rate", "vs RandomPunisher, MCTS agent (win rate)"),
    ("gate.score", "vs the previous generation (score)"),
]
"""The headline metrics of a generation (its evaluate stage's keys) with their labels, in
order: the summary's figures, the parent run's ``headline/`` charts, the runs list's columns."""
HEADLINE_SHORT = {
    "solver.acc": "solver.acc",
    "solver.weak_acc": "weak_acc",
    "punisher.policy.win_rate": "vs RandomPunisher: network",
    "punisher.mcts.win_rate": "MCTS",
    "gate.score": "vs previous",
}
""":data:`HEADLINE`'s keys as one line names them (:func:`headline_line`)."""


def headline_line(metrics: dict) -> str:
    """The headline figures in one line, rounded: ``solver.acc 0.820, weak_acc 0.951, vs
    RandomPunisher: network 0.990, MCTS 1.000, vs previous 0.550`` (MLflow descriptions,
    whose first lines are what its UI shows)."""
    return ", ".join(f"{short} {float(metrics[key]):.3f}"
                     for key, short in HEADLINE_SHORT.items() if key in metrics)  # fmt: skip


NOTE_TAG = "mlflow.note.content"
"""The tag MLflow's UI shows as a run's description: the summary on a parent, the headline
line on a generation's child."""

HEADLINE_SECTION = "headline/"
"""The prefix of the parent run's copies of :data:`HEADLINE`: MLflow's UI shows metrics with a
``<prefix>/`` as a chart section of their own, above the others."""


DEFAULT_PIPELINE = "alphazero"
"""The main job: what ``kedro run`` runs (``__default__``)."""


def pipeline_names(names: list[str] | None) -> list[str]:
    """A run's pipelines by their own names, sorted: ``__default__`` (or none given) is the
    main job, so ``kedro run`` and ``kedro run --pipeline=alphazero`` ran the same thing."""
    return sorted({DEFAULT_PIPELINE if n == "__default__" else n for n in names or ["__default__"]})


def pipeline_label(names: list[str] | None) -> str:
    """A run's pipelines as people name them (:func:`pipeline_names`, comma-joined)."""
    return ",".join(pipeline_names(names))


RESUME_KEY = "resume"
"""The top-level parameter that names the run to resume (:mod:`.run.rules`)."""


MODEL_PARTITION = re.compile(
    rf"^(?:.+/)?(?P<name>(?P<kind>{GENERATION}|{CHUNK})_(?P<k>\d{{3,}}))/model\.pt/(?P<v>[^/]+)/model$"
)
"""A model's partition id in the ``model_files`` view of the models folder:
``gen_008/model.pt/<version>/model`` or ``reinforce/rf_008/model.pt/<version>/model``
(groups ``name``, ``kind``, ``k``, ``v``; an AlphaZero model's version is its run id)."""


class ModelFile(NamedTuple):
    """A model file of the models folder, as :data:`MODEL_PARTITION` reads its partition id."""

    pid: str  # the partition id in ``model_files``
    name: str  # gen_008, rf_008
    kind: str  # GENERATION or CHUNK
    k: int
    version: str  # an AlphaZero model's version is its run id


def model_index(pids: Iterable[str], kind: str | None = None) -> list[ModelFile]:
    """The model files among partition ids (of ``kind`` only, if given), sorted by kind,
    number and version: the one index of the models folder."""
    found = []
    for pid in pids:
        m = MODEL_PARTITION.match(pid)
        if m and (kind is None or m["kind"] == kind):
            found.append(ModelFile(pid, m["name"], m["kind"], int(m["k"]), m["v"]))
    return sorted(found, key=lambda f: (f.kind, f.k, f.version))


GAMES_PARTITION = re.compile(
    rf"^(?P<name>{GENERATION}_(?P<k>\d{{3,}}))/games\.parquet/(?P<v>[^/]+)/games$"
)
"""A generation's games in the ``games_files`` view of the self-play folder:
``gen_008/games.parquet/<version>/games`` (groups ``name``, ``k``, ``v``: the run id)."""


FILTERS = {
    "tags": "tags",
    "from_nodes": "from_nodes",
    "to_nodes": "to_nodes",
    "node_names": "node_names",
    "from_inputs": "from_inputs",
    "to_outputs": "to_outputs",
    "namespaces": "node_namespaces",
}
"""``KedroSession.run``'s filter arguments (the ``run_params`` keys hooks see) and their names in
``Pipeline.filter``: the one list of Kedro's node filters."""

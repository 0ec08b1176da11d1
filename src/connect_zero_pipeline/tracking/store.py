"""The MLflow store of a project: anchored at the project root, created once, safe to copy.

- **Anchored.** ``conf/base/mlflow.yml`` names the store with the
  ``${cz.project_root:}`` resolver (:func:`.common.project.in_project`), so the sqlite file
  is ``<project>/mlflow.db`` whichever folder Kedro or a notebook starts in.
- **Created under a lock.** Two runs that start together in a fresh project
  would both create and migrate ``mlflow.db`` (an alembic race, one of them
  crashes) and both create the experiment. :func:`prepare_store` does both
  under an exclusive file lock (``<project>/.mlflow.lock``) before
  kedro-mlflow touches the store; afterwards they only read it.
- **Writable, checked first.** Before the first node, :func:`prepare_store` takes a write
  lock on the sqlite file and releases it. A store another process holds locked is
  waited for (:data:`STORE_WAIT_S`), then refused; a store that cannot be written
  (a read-only file or folder) is refused at once. Either way the run stops before it
  writes anything, with one paragraph naming the file and what to do
  (:func:`store_help`).
- **Copy-safe.** MLflow stores absolute ``file://`` artifact locations. In a
  copied project (``cp -a project copy``) they still point into the
  original, so new run folders would land there. :func:`prepare_store`
  rewrites every location under ``<original>/mlruns`` to
  ``<this project>/mlruns`` first (experiments, runs, logged models, model
  versions), so a copy writes only into itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import sqlite3
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

from ..common.errors import RunRefused
from ..common.internals import experiment_in_store, relocate_artifacts
from ..common.naming import HEADLINE, generation_name
from ..common.project import user_cache
from .registry import REGISTERED_MODEL, crown_by_ladder

log = logging.getLogger(__name__)

STORE_WAIT_S = float(os.environ.get("CZ_STORE_WAIT_S", 20))
"""How long a run waits for another process's write lock on the store before it gives up:
20 s, MLflow's own wait on a locked sqlite store (``CZ_STORE_WAIT_S`` sets another)."""
LOCK_NAME = ".mlflow.lock"
ARTIFACTS = "mlruns"


def sqlite_path(tracking_uri: str | None) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI, else None."""
    if not tracking_uri or not tracking_uri.startswith("sqlite:///"):
        return None
    return Path(unquote(tracking_uri[len("sqlite:///") :]))


@contextmanager
def store_lock(root: Path):
    """An exclusive lock on the project's MLflow store (released when the block ends)."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _store_name(db: Path | None = None) -> str:
    """The store's file: ``db``, else the sqlite file of MLflow's tracking URI (which
    kedro-mlflow sets for the run), else ``mlflow.db``."""
    if db is None:
        import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

        db = sqlite_path(mlflow.get_tracking_uri())
    return str(db or "mlflow.db")


def store_help(problem: str, db: Path | None = None, detail: str = "") -> str:
    """One paragraph on a store that is ``"locked"`` or ``"read-only"``: the file, what to do."""
    name = _store_name(db)
    if problem == "locked":
        return (
            f"The MLflow store {name} is locked: another process held a write lock on it for "
            f"more than {STORE_WAIT_S:.0f} s (another run or `mlflow ui` in a long write, or a "
            f"program keeping a transaction open). Wait for it or stop it, then run again; a "
            f"run stopped by this resumes with `make resume RUN=<id>` (ids: python -m "
            f"connect_zero_pipeline runs)."
        )
    return (
        f"The MLflow store {name} cannot be written{f' ({detail})' if detail else ''}. Runs "
        f"record their parameters, metrics and models there. Make the file and its folder "
        f"writable (chmod u+w), or name another store in conf/local/mlflow.yml "
        f"(server.mlflow_tracking_uri). Nothing was written."
    )


def store_problem(error: BaseException) -> str | None:
    """``"locked"`` or ``"read-only"`` when ``error`` (or the error it wraps, as MLflow's
    ``MlflowException`` wraps SQLAlchemy's) is a sqlite store's, else None."""
    text = str(error)
    if "database is locked" in text:
        return "locked"
    if "readonly database" in text:
        return "read-only"
    return None


def store_line(error: BaseException) -> str | None:
    """``error`` in one line when it is the store's (:func:`store_problem`), naming the store
    (a manifest's error, a warning; :func:`store_help` is the paragraph), else None."""
    problem = store_problem(error)
    if problem is None:
        return None
    name = _store_name()
    if problem == "locked":
        return f"the MLflow store {name} is locked by another process"
    return f"the MLflow store {name} cannot be written (read-only)"


def check_writable(db: Path) -> None:
    """Take and release a write lock on the sqlite file ``db`` (waiting up to
    :data:`STORE_WAIT_S` for another process's lock); a new store needs a writable folder.

    Raises:
        RunRefused: with :func:`store_help`'s paragraph.
    """
    if not db.exists():
        folder = next((p for p in [db.parent, *db.parent.parents] if p.exists()), db.parent)
        if not os.access(folder, os.W_OK):
            raise RunRefused(store_help("read-only", db, f"its folder {folder} is read-only"))
        return
    if not os.access(db, os.W_OK) or not os.access(db.parent, os.W_OK):
        bad = db if not os.access(db, os.W_OK) else db.parent
        raise RunRefused(store_help("read-only", db, f"{bad} is read-only"))
    con = sqlite3.connect(db, timeout=STORE_WAIT_S)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.rollback()
    except sqlite3.OperationalError as exc:
        problem = "locked" if "locked" in str(exc) else "read-only"
        raise RunRefused(store_help(problem, db, str(exc))) from None
    finally:
        con.close()


def prepare_store(root: Path, mlflow_conf: dict) -> None:
    """Create (or migrate) the sqlite store and the experiment once, and relocate a copied store.

    Args:
        root: the project root.
        mlflow_conf: the ``mlflow`` configuration (``conf/*/mlflow.yml``, merged).
    """
    server = mlflow_conf.get("server") or {}
    db = sqlite_path(server.get("mlflow_tracking_uri"))
    if db is None:  # a server or another backend: nothing local to prepare
        return
    experiment_conf = (mlflow_conf.get("tracking") or {}).get("experiment") or {}
    name = experiment_conf.get("name")
    artifacts = (experiment_conf.get("create_experiment_kwargs") or {}).get("artifact_location")
    artifacts_dir = Path(artifacts) if artifacts else Path(ARTIFACTS)
    if not artifacts_dir.is_absolute():
        artifacts_dir = root / artifacts_dir
    check_writable(db)
    with store_lock(db.parent):
        from mlflow.tracking import MlflowClient  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

        if not db.exists():
            new_store(db, artifacts_dir)
        client = MlflowClient(tracking_uri=f"sqlite:///{db}")
        if name and client.get_experiment_by_name(name) is None:
            client.create_experiment(name, artifact_location=artifacts_dir.as_uri())
        if name:
            relocate_artifacts(db, name, artifacts_dir)


def empty_store() -> Path | None:
    """An MLflow sqlite store of the installed MLflow with its schema and nothing else, made
    once per MLflow version in the user's cache folder (:func:`.common.project.user_cache`; MLflow's
    schema migrations take about 2 s a store); None where that folder cannot be written."""
    import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)
    from mlflow.tracking import MlflowClient  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    folder = user_cache()
    path = folder / f"mlflow-{mlflow.__version__}-empty.db"
    if path.exists():
        return path
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        MlflowClient(tracking_uri=f"sqlite:///{tmp}").search_experiments()  # creates, migrates
        os.replace(tmp, path)  # whole, or not at all: another process may be making it too
    except Exception as exc:  # a read-only home, a full disk: the store is made in place
        log.debug("No empty MLflow store in %s: %s", folder, exc)
        tmp.unlink(missing_ok=True)
        return None
    return path


def new_store(db: Path, artifacts: Path) -> None:
    """A new store at ``db``: a copy of :func:`empty_store` (its ``Default`` experiment's
    artifacts pointed at ``artifacts``), or where there is none, made by MLflow in place."""
    from mlflow.tracking import MlflowClient  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    template = empty_store()
    if template is None:
        MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
        return
    tmp = db.with_name(f".{db.name}.{os.getpid()}.tmp")
    shutil.copyfile(template, tmp)
    relocate_artifacts(tmp, DEFAULT_EXPERIMENT, artifacts / "0", quiet=True)
    os.replace(tmp, db)


DEFAULT_EXPERIMENT = "Default"
"""The experiment MLflow makes in every store (id 0)."""


def publish_ladder(ratings, plot_png: bytes, *, move_champion: bool) -> None:
    """A ladder's ratings in MLflow (nothing when tracking is off: the catalog outputs are
    the result).

    - ``elo``, ``elo_low``, ``elo_high`` on each rated generation's child run of its run's
      parent, with ``step = generation``;
    - the tag ``ladder.elo`` on each rated registered version, and with ``move_champion``
      the ``champion`` alias on the best of them (:func:`.tracking.registry.crown_by_ladder`);
    - ``ladder/ratings.csv`` and ``ladder/elo.png`` (``plot_png``, the plot's file) on the
      active run.
    """
    import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    active = mlflow.active_run()
    if active is None:
        return
    client = mlflow.MlflowClient()
    experiment = active.info.experiment_id
    logged = 0
    for run_id, part in ratings[ratings["kind"] == "generation"].groupby("run_id"):
        parents = client.search_runs([experiment], f"tags.run_id = '{run_id}'")
        parents = [p for p in parents if "mlflow.parentRunId" not in p.data.tags]
        if not parents:
            log.warning("Ladder: no MLflow run with run_id %s: its Elo is not logged there", run_id)
            continue
        for parent in parents:
            children = client.search_runs(
                [experiment], f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
            )
            by_name = {c.info.run_name: c.info.run_id for c in children}
            for r in part.itertuples():
                child = by_name.get(generation_name(int(r.generation)))
                if child is None:
                    continue
                for name in ("elo", "elo_low", "elo_high"):
                    client.log_metric(child, name, float(getattr(r, name)), step=int(r.generation))
                logged += 1
    registry = ratings[ratings["kind"] == "registry"]
    for r in registry.itertuples():
        version = r.source.rsplit("/", 1)[-1]
        client.set_model_version_tag(REGISTERED_MODEL, version, "ladder.elo", f"{r.elo:.1f}")
    if move_champion and len(registry):
        best = registry.sort_values("elo", ascending=False).iloc[0]
        crown_by_ladder(client, best.source.rsplit("/", 1)[-1])
        log.info("Ladder: %s is the champion (Elo %.0f)", best.label, best.elo)
    client.log_text(active.info.run_id, ratings.to_csv(index=False), "ladder/ratings.csv")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "elo.png").write_bytes(plot_png)
        client.log_artifact(active.info.run_id, str(Path(folder) / "elo.png"), "ladder")
    log.info("Ladder: Elo logged on %d generation child run(s)", logged)


TRAINING_VIEW = "workflowType=machine_learning"
"""The query that opens MLflow 3's UI in its model-training view (not GenAI)."""
RUNS_VIEW = "connect-zero"
"""The name of the runs list's shared view (:func:`runs_view`): ``viewStateShareKey=<it>``."""
_SHARED_VIEW_TAG = "mlflow.sharedViewState."  # MLflow's UI reads a shared view from this tag


def runs_view() -> tuple[str, str]:
    """The experiment tag (key, value) of the runs list's shared view in MLflow 3's UI: the
    headline metrics (:data:`.common.naming.HEADLINE`) as its first columns, in order, where the
    UI's own default shows no metric column. The UI opens it from the address
    :func:`ui_url` prints; its "Override saved view" keeps it as the user's own."""
    columns = [f"metrics.`{key}`" for key, _ in HEADLINE]
    state = {"selectedColumns": columns, "columnOrder": columns}
    return _SHARED_VIEW_TAG + RUNS_VIEW, json.dumps(state)


MLFLOW_PORT = 5000
"""Where ``make mlflow`` serves the UI by default (its ``MLFLOW_PORT``)."""


LOOPBACK = "127.0.0.1"
"""The only interface the project's servers (MLflow, kedro-viz, the play page) listen on."""


def ui_base(port: int = MLFLOW_PORT) -> str:
    """The UI's address on this machine: the one place the project builds it."""
    return f"http://{LOOPBACK}:{port}"


def run_url(experiment_id: str, run_id: str, port: int = MLFLOW_PORT) -> str:
    """A run's page in the UI of ``make mlflow``, in the model-training view."""
    return f"{ui_base(port)}/#/experiments/{experiment_id}/runs/{run_id}?{TRAINING_VIEW}"


def ui_url(db: Path, port: int, experiment: str = "connect_zero_pipeline", *,
           headline_view: bool = False) -> str:  # fmt: skip
    """The runs list of the project's experiment in the MLflow UI of ``make mlflow`` (the
    model-training view), or the UI's start page before the first run. ``headline_view``:
    with the headline columns of :func:`runs_view` (a shared view, which the UI opens with
    its "You're viewing a shared view" banner; None where the store has no such view)."""
    base = ui_base(port)
    found = experiment_in_store(db, experiment, runs_view()[0]) if Path(db).is_file() else None
    if found is None:
        return None if headline_view else f"{base}/"
    experiment_id, view = found
    runs = f"{base}/#/experiments/{experiment_id}/runs?{TRAINING_VIEW}"
    if not headline_view:
        return runs
    return f"{runs}&viewStateShareKey={RUNS_VIEW}" if view else None  # none in an older store


def serving_port(store: Path) -> int | None:
    """The port of an MLflow UI or server on this machine that serves the sqlite store
    ``store`` (read from the processes' command lines in ``/proc``: ``mlflow ui`` or
    ``mlflow server`` with ``--backend-store-uri sqlite:///...`` naming the same file, a
    relative one from that process's folder); None where none does, or there is no
    ``/proc``. The port is its ``--port`` (``-p``), else MLflow's default, 5000."""
    want = Path(store).resolve()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if "--backend-store-uri" not in argv or not any(
            a in ("ui", "server") for a in argv[:4]
        ) or not any(Path(a).name == "mlflow" for a in argv[:3]):  # fmt: skip
            continue
        uri = argv[argv.index("--backend-store-uri") + 1 :][:1]
        served = sqlite_path(uri[0]) if uri else None
        if served is None:
            continue
        try:
            served = (Path(os.readlink(proc / "cwd")) / served).resolve()
        except OSError:
            continue
        if served != want:
            continue
        for flag in ("--port", "-p"):
            if flag in argv and argv.index(flag) + 1 < len(argv):
                with contextlib.suppress(ValueError):
                    return int(argv[argv.index(flag) + 1])
        return MLFLOW_PORT
    return None

"""Shared test helpers: a throw-away copy of the Kedro project, real `kedro run`
subprocesses, tiny labelled sets and small readers of a run's files. The fixtures that use
them are in conftest.py; test modules import these from here."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


PONS_DIR = REPO / "tests" / "data" / "pons"  # Pascal Pons' two public sets (see its README)


os.environ.setdefault("DO_NOT_TRACK", "1")


os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")


# One torch (OpenMP) thread per process, the test runner's and every `kedro run` it starts:
# tests run side by side (two runs at once, pytest -n), and OpenMP threads that spin-wait
# on a shared 2-core machine made one tiny run's training ~100x slower. Settings that name
# a thread count (train.node.num_threads=2) still take it.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def make_project(project: Path, *, pin_store: bool = True) -> Path:
    """A new project at ``project`` made by the project's own code
    (:func:`connect_zero_pipeline.common.project.new_project`), for runs to write into.

    ``pin_store``: the MLflow store is this project's ``mlflow.db`` by absolute path
    (conf/local/mlflow.yml). MLflow caches stores by URI string, so a relative
    ``sqlite:///mlflow.db`` would keep pointing at the first test project of a process:
    projects run in-process need the pin; ``False`` keeps conf/base's default store and
    no ``mlflow.db``, which the first run creates, as on a fresh clone. A pinned store
    starts as a copy of :func:`empty_store` (MLflow's schema migrations take 2 s a store):
    "nothing was written" is then :func:`store_untouched`. The public sets (catalog entry
    ``pons_benchmarks``) are there, but the local env scores none, to keep runs short (an
    env run, which does not read conf/local, names its own).
    """
    from connect_zero_pipeline.common.project import new_project

    new_project(REPO, project, store=project / "mlflow.db" if pin_store else None)
    if pin_store:
        shutil.copy(empty_store(), project / "mlflow.db")
    no_public_sets(project, "local")
    return project


def empty_store() -> Path:
    """An MLflow sqlite store with MLflow's schema and nothing else: the one the project copies
    into a new project (:func:`connect_zero_pipeline.tracking.store.empty_store`)."""
    from connect_zero_pipeline.tracking.store import empty_store as template

    found = template()
    assert found is not None, "the user's cache folder cannot be written"
    return found


def store_untouched(project: Path) -> bool:
    """Whether the project's MLflow store is still the empty one it was made with."""
    return (project / "mlflow.db").read_bytes() == empty_store().read_bytes()


NO_PUBLIC_SETS = (
    "pons_benchmarks:\n  type: connect_zero_pipeline.datasets.PonsFilesDataset\n  filepaths: {}\n"
)


def no_public_sets(project: Path, env: str) -> None:
    """Env ``env`` of ``project`` scores no public position set (an empty ``pons_benchmarks``)."""
    (project / "conf" / env / "catalog.yml").write_text(NO_PUBLIC_SETS)


def run_kedro(project: Path, pipeline: str | None = None, params: dict | None = None, **kwargs):
    """Run a pipeline in-process with a fresh session; returns the run's outputs."""
    from kedro.framework.startup import bootstrap_project

    from connect_zero_pipeline.session.project_session import ProjectSession

    nested: dict = {}
    for key, value in (params or {}).items():  # "a.b": v -> {"a": {"b": v}}, as `--params` does
        *parents, leaf = key.split(".")
        node = nested
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    bootstrap_project(project)
    with ProjectSession.create(project_path=project, runtime_params=nested) as session:
        return session.run(pipeline_names=[pipeline] if pipeline else None, **kwargs)


def write_versioned_parquet(
    project: Path, relpath: str, df, version: str = "2026-01-01T00.00.00.000Z"
):
    """Save ``df`` as one version of a versioned ParquetDataset at ``relpath`` (e.g. data/x.parquet)."""
    target = project / relpath / version / Path(relpath).name
    target.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(target, index=False)
    return target


def tiny_pons_set(seed: int = 0, num_games: int = 6):
    """A small, real solver-labelled set of late-game positions (cheap to solve)."""
    from connect_zero_pipeline.core.labelling import (
        Labeller,
        collect_positions,
        dedupe_decisive,
        generate_games,
        labelled_table,
    )

    with Labeller(max_nodes=0) as lab:
        games = generate_games(num_games, lab, epsilon=0.5, opening_plies=(24, 28), seed=seed)
        positions = collect_positions(games, min_ply=24)
        scores, ok, _ = lab.label(positions["position"].to_numpy(), positions["mask"].to_numpy())
    return dedupe_decisive(labelled_table(positions, scores, ok))


def versions(project: Path, relpath: str) -> list[str]:
    """The version folders of a versioned dataset at ``relpath``, oldest first."""
    folder = project / relpath
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def latest(project: Path, relpath: str) -> Path:
    """The file of the latest version of a versioned dataset at ``relpath``."""
    return project / relpath / versions(project, relpath)[-1] / Path(relpath).name


def mlflow_client(project: Path):
    """A client on the test project's own sqlite store."""
    import mlflow

    store = f"sqlite:///{project / 'mlflow.db'}"  # the registry too: its default is global
    return mlflow.MlflowClient(tracking_uri=store, registry_uri=store)


PONS_FILE = "data/03_primary/pons_positions.parquet"


def unfinished_random_games(num: int, min_ply: int, max_ply: int, seed: int) -> list[str]:
    """Unfinished positions from uniformly random games, ``min_ply <= ply <= max_ply``."""
    from connect_zero_pipeline.core.bitboard import is_terminal, moves_to_bitboards

    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < num:
        target = rng.randint(min_ply, max_ply)
        moves = ""
        while len(moves) < target:
            pos, mask = moves_to_bitboards(moves)
            if is_terminal(pos, mask):
                break
            legal = [c for c in range(7) if not mask >> (7 * c + 5) & 1]
            moves += str(rng.choice(legal) + 1)
        if len(moves) == target and not is_terminal(*moves_to_bitboards(moves)):
            out.append(moves)
    return out


def bitboard_arrays(moves: list[str]):
    """``(position, mask)`` uint64 arrays of Pons move strings."""
    import numpy as np

    from connect_zero_pipeline.core.bitboard import moves_to_bitboards

    pairs = [moves_to_bitboards(m) for m in moves]
    return (
        np.array([p for p, _ in pairs], dtype=np.uint64),
        np.array([m for _, m in pairs], dtype=np.uint64),
    )


KEDRO = str(Path(sys.executable).with_name("kedro"))


def _tiny() -> dict:
    from connect_zero_pipeline.common.config_loader import env_params

    return env_params(REPO / "conf", "tiny")


TINY = _tiny()
"""conf/tiny, the one tiny recipe, as ``--params`` (flat keys): a generation in seconds."""
TINY_CLI = {k: v for k, v in TINY.items() if not k.startswith("reinforce.")}
""":data:`TINY` for an alphazero run (its REINFORCE keys would only name a changed recipe)."""


def cli_params(params: dict) -> str:
    """``{"a.b": 1}`` -> ``"a.b=1"``, as ``kedro run --params`` takes them
    (:func:`connect_zero_pipeline.common.config_loader.params_text`)."""
    from connect_zero_pipeline.common.config_loader import params_text

    return params_text(params)


def _as_in_a_terminal() -> None:
    """A started run gets Ctrl-C and a closed terminal as a terminal's foreground process
    does. A test suite run as a background job (``make test &``, some CI runners) ignores
    SIGINT, one run under ``nohup`` ignores SIGHUP, and an ignored signal stays ignored in
    every process it starts: Python would then never raise KeyboardInterrupt, a server would
    outlive its terminal, and a test of either would see the process go on instead."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def kedro_cli(project: Path, *args: str, wait: bool = True, timeout: float = 600, cwd=None,
              terminal: bool = False, env: dict | None = None):  # fmt: skip
    """``kedro <args>`` in a real subprocess in ``project`` (or ``cwd``).

    ``wait``: return the finished ``CompletedProcess``; else the running ``Popen``.
    ``terminal``: in a process group of its own, as a terminal's foreground job, so that
    ``os.killpg(proc.pid, SIGINT)`` is a Ctrl-C (it reaches the run's workers too). ``env``:
    variables set for it.
    """
    import subprocess

    # One log record per line (rich wraps at 80 columns off a terminal): tests wait on lines.
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "COLUMNS": "250", "PYTHONUNBUFFERED": "1",
           **(env or {})}  # fmt: skip
    command = [KEDRO, *args]
    if not wait:
        return subprocess.Popen(
            command,
            cwd=cwd or project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_as_in_a_terminal,
            start_new_session=terminal,
        )
    return subprocess.run(
        command, cwd=cwd or project, env=env, capture_output=True, text=True, timeout=timeout
    )


def wait_for_line(proc, text: str) -> str:
    """Read ``proc``'s output (``kedro_cli(wait=False)``) up to the first line holding
    ``text``; that line. Fails, with the output's tail, if the process ends first."""
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            return line
    raise AssertionError(f"{text!r} never came; the output ended with:\n{''.join(seen[-40:])}")


def files_under(folder: Path) -> set[str]:
    """Every file below ``folder``, as relative paths."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def model_digest(path: Path) -> str:
    """A checksum of a model file's weights (not of its pickled bytes)."""
    import hashlib

    import torch

    state = torch.load(path, weights_only=True)["state_dict"]
    h = hashlib.sha256()
    for key in sorted(state):
        h.update(key.encode())
        h.update(state[key].numpy().tobytes())
    return h.hexdigest()


FINISHED_RUN = {
    **TINY_CLI,
    "alphazero.num_generations": 2,
    "selfplay.node.workers": 2,
    "selfplay.schedule.2.mcts.sims": 3,
    "train.schedule.2.buffer_gens": 1,
}
"""The suite's finished run (conftest's ``finished_run``): conf/tiny, 2 generations, its
self-play on two worker processes kept between generations (what a killed run leaves behind:
the extension test kills one; the workers change where games are played, not what), and a
schedule: generation 2 searches with 3 simulations and trains on its own games alone."""
FINISHED_LOG = "run.log"
"""The finished run's output (stdout: its summary), beside its project."""


def copy_project(source: Path, target: Path) -> Path:
    """A copy of a project with its runs, as a user would make it (``cp -a``)."""
    shutil.copytree(source, target, symlinks=True)
    return target


def selfplay_config(**keys):
    """A :class:`SelfPlayConfig` whose search keys (``sims``, ``search``, ``dirichlet_eps``,
    ...) change self-play's search (its ``mcts``, by default :data:`~.selfplay.SEARCH`)."""
    from dataclasses import fields, replace

    from connect_zero_pipeline.core.config.search import MCTSConfig
    from connect_zero_pipeline.core.config.selfplay import SEARCH, SelfPlayConfig

    names = {f.name for f in fields(MCTSConfig)}
    search = {k: keys.pop(k) for k in list(keys) if k in names}
    mcts = replace(keys.pop("mcts", SEARCH), **search)
    return SelfPlayConfig(**keys, mcts=mcts)


def command(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """``python -m connect_zero_pipeline <argv>`` in this process, with ``stdin`` as its
    input: ``(exit status, stdout, stderr)`` (usage errors give 2, as on the command line)."""
    import contextlib
    import io
    import sys

    from connect_zero_pipeline.commands import invoke

    out, err, before = io.StringIO(), io.StringIO(), sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = invoke(list(argv))
    finally:
        sys.stdin = before
    return status, out.getvalue(), err.getvalue()


def wheel_from_installed(name: str, dest: Path) -> Path:
    """A wheel of installed distribution ``name``, made from its installed files and its own
    tags (its ``WHEEL`` file): what a package index would serve, with no index. Scripts and
    byte-code are left out (an installer makes them)."""
    import base64
    import hashlib
    import importlib.metadata
    import zipfile

    dist = importlib.metadata.distribution(name)
    info = next(f for f in dist.files if f.name == "METADATA").parent  # <name>-<v>.dist-info
    tags = [line.split(":", 1)[1].strip() for line in dist.read_text("WHEEL").splitlines()
            if line.startswith("Tag:")]  # fmt: skip
    stem = info.name.removesuffix(".dist-info")
    path = dest / f"{stem}-{tags[0]}.whl"
    record = []
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for file in dist.files:
            rel = str(file)
            if (
                rel.startswith("..")
                or "__pycache__" in rel
                or (file.parent == info and file.name in skip)
            ):
                continue
            data = Path(dist.locate_file(file)).read_bytes()
            wheel.writestr(rel, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{rel},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def checkout_copy(dest: Path) -> Path:
    """The project's files as a machine without git's ignored ones gets them (a ``git
    archive``, or the device tool's copy): tracked and untracked-not-ignored files only, so
    no ``node_modules``, ``.venv`` or ``data`` outputs."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():  # a file deleted from the work tree is still listed
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


HEAVY = ("torch", "mlflow", "pandas", "pyarrow", "numba", "onnx", "onnxruntime")
"""What a command that only reads its arguments and parameters must not import: each takes
hundreds of milliseconds to a few seconds."""
IMPORT_TIMES = {"PYTHONPROFILEIMPORTTIME": "1"}
"""``env`` of a command whose imports a test reads (:func:`heavy_imports` of its stderr)."""


def heavy_imports(stderr: str) -> set[str]:
    """The :data:`HEAVY` packages a process imported, from its ``-X importtime`` lines."""
    names = {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
             if line.startswith("import time:") and "|" in line}  # fmt: skip
    return {name for name in names if name in HEAVY}


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc), zombies left out."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def survivors(pids: set[int], bound: float = 60.0) -> set[int]:
    """Wait for each of ``pids`` to exit (a pidfd turns readable at its exit); those still
    running after ``bound`` seconds, a bound that only keeps a broken program from hanging
    the suite."""
    import contextlib
    import select
    import time

    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # already gone (and reaped)
            fds[os.pidfd_open(pid)] = pid
    try:
        waiting = set(fds)
        end = time.monotonic() + bound
        while waiting and (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select(list(waiting), [], [], left)
            waiting -= set(ready)
        return {fds[fd] for fd in waiting}
    finally:
        for fd in fds:
            os.close(fd)

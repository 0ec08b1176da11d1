"""Fault injection for real ``kedro run`` processes (see ``tests/faults/sweep.py``).

Python imports this module at start-up when ``tests/faults`` is on ``PYTHONPATH``. It does
something only when ``CZ_FAULT_LOG`` names a file, and only in the first process that sees
it (not in the run's worker processes). It then counts the run's *write points*, in the
order the run reaches them, appending one JSON line per event to ``CZ_FAULT_LOG``:

- ``dataset``: every save through the project's catalog (``AtomicDataCatalog.save``);
- ``manifest``: every write of the run's manifest (``run.manifest.write_manifest``, ``claim_manifest``);
- ``mlflow``: every write of MLflow's tracking and registry stores (the outermost call of
  each ``create_*``, ``log_*``, ``set_*``, ``update_*``, ... method) and every artifact copy.

Each point is logged with the node it ran in (``node``: the kedro node whose task was under way,
its hooks and output saves included; ``<run>`` outside any node) and its place among that
node's points (``nth``, 1-based), so that a point can be named in another run too.

``CZ_FAULT_AT=k`` makes write point ``k`` (1-based) fail with ``OSError(ENOSPC)`` the way a
full disk does (``CZ_FAULT_AT=<node>#<n>``: the ``n``-th point of that node, in whatever run
reaches it: a resume's points are not numbered as a fresh run's): inside it, the first
write to a file writes half its bytes and raises; a store write raises before it changes
anything; a point that wrote nothing raises at its end. With ``CZ_FAULT_STICKY=1`` the disk stays full: every later point fails too (the run
cannot record its own failure: a ``data/`` folder made read-only mid-run). Every load of a versioned file is logged with the sha256 of the bytes read, so a test
can show that no partial version was ever read.

``CZ_PAUSE_AT=<name>`` stops the run before the write point of that name (a dataset's name,
for a dataset save), saying ``Paused at <name>`` on stdout, until it is killed: a test that
kills a run mid-way kills it there, however late it reads that line.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def file_sha(path: Path) -> str:
    """The sha256 of a file, or of a folder's files and their names."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        h.update(str(file.relative_to(path) if path.is_dir() else "").encode())
        h.update(file.read_bytes())
    return h.hexdigest()


_LOG = os.environ.get("CZ_FAULT_LOG")
if _LOG and os.environ.get("CZ_FAULT_OWNER") is None:
    os.environ["CZ_FAULT_OWNER"] = str(os.getpid())  # worker processes inherit it: inactive

    import builtins
    import errno
    import functools
    import io
    import json
    import re
    import threading

    _AT = os.environ.get("CZ_FAULT_AT", "0")
    _STICKY = os.environ.get("CZ_FAULT_STICKY") == "1"
    _PAUSE = os.environ.get("CZ_PAUSE_AT")
    _state = threading.local()
    _count = 0
    _in_node: dict[str, int] = {}  # points so far in each node
    _fired = False  # the fault has fired (sticky: every later point fails too)
    _armed = False  # inside the faulted write point: the next write fails
    _real_open = builtins.open

    def _event(**fields) -> None:
        with _real_open(_LOG, "a") as f:
            f.write(json.dumps(fields) + "\n")

    def _disk_full(what: str) -> OSError:
        _event(fault=_count, during=what)
        return OSError(errno.ENOSPC, "No space left on device (injected)", what)

    class _HalfWriter:
        """A file whose first write stores half its bytes, then fails as a full disk does."""

        def __init__(self, file, name):
            self._file, self._name = file, name

        def write(self, data):
            global _armed
            if _armed:
                _armed = False
                part = data[: len(data) // 2]
                self._file.write(part)
                self._file.flush()
                raise _disk_full(str(self._name))
            return self._file.write(data)

        def __getattr__(self, name):
            return getattr(self._file, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._file.close()

    @functools.wraps(_real_open)
    def _open(file, mode="r", *args, **kwargs):
        handle = _real_open(file, mode, *args, **kwargs)
        if _armed and any(c in mode for c in "wax+"):
            return _HalfWriter(handle, file)
        return handle

    builtins.open = io.open = _open

    def _point(kind: str, name: str, call, /, *args, **kwargs):
        """Run ``call`` as one write point (nested points inside it are not counted)."""
        global _count, _armed, _fired
        depth = getattr(_state, "depth", 0)
        if depth:
            return call(*args, **kwargs)
        _count += 1
        node = getattr(_state, "node", "<run>")
        nth = _in_node[node] = _in_node.get(node, 0) + 1
        _event(point=_count, kind=kind, name=name, node=node, nth=nth)
        if name == _PAUSE:
            print(f"Paused at {name}", flush=True)
            threading.Event().wait()  # until the test kills the run
        faulted = _AT in (str(_count), f"{node}#{nth}") or (_STICKY and _fired)
        _fired = _fired or faulted
        if faulted and kind == "mlflow":
            raise _disk_full(name)
        _armed = faulted
        _state.depth = depth + 1
        try:
            result = call(*args, **kwargs)
        finally:
            _state.depth = depth
            still_armed, _armed = _armed, False
        if faulted and still_armed:  # it wrote no file: the disk fills right after it
            raise _disk_full(name)
        return result

    def _wrap(owner, attr: str, kind: str, label=None) -> None:
        original = getattr(owner, attr)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            name = label(*args, **kwargs) if label else f"{owner.__name__}.{attr}"
            return _point(kind, name, original, *args, **kwargs)

        setattr(owner, attr, wrapper)

    from kedro.runner.task import Task

    from connect_zero_pipeline.datasets.atomic import AtomicDataCatalog
    from connect_zero_pipeline.run import manifest as runs

    _execute = Task.execute

    def _in_task(self, *args, **kwargs):
        _state.node = self.node.name
        try:
            return _execute(self, *args, **kwargs)
        finally:
            _state.node = "<run>"

    Task.execute = _in_task

    _wrap(AtomicDataCatalog, "save", "dataset", lambda self, name, data: name)
    for _fn in ("write_manifest", "claim_manifest"):
        _wrap(runs, _fn, "manifest", lambda root, manifest, _f=_fn: f"{_f} {manifest['status']}")

    _original_load = AtomicDataCatalog.load

    def _load(self, name, *args, **kwargs):
        data = _original_load(self, name, *args, **kwargs)
        dataset = self[name]
        try:
            path = Path(str(dataset._get_load_path()))
        except Exception:  # not a versioned file
            return data
        if path.exists():
            _event(load=name, path=str(path), sha=file_sha(path))
        return data

    AtomicDataCatalog.load = _load

    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore as _Registry
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore as _Tracking

    _WRITES = re.compile(
        r"^(create|log|set|update|delete|record|finalize|rename|transition|"
        r"restore|link|unlink|add|register)_"
    )
    for _store in (_Tracking, _Registry):
        for _attr in sorted(vars(_store)):
            if _WRITES.match(_attr) and callable(getattr(_store, _attr)):
                _wrap(_store, _attr, "mlflow")
    for _attr in ("log_artifact", "log_artifacts"):
        _wrap(LocalArtifactRepository, _attr, "mlflow")

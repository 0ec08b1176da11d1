"""The fault-injection sweep: each write point of a tiny real run fails once, then the run resumes.

A clean ``kedro run`` (one generation, then the export) counts the run's write points
(``tests/faults/sitecustomize.py``: every dataset save, manifest write and MLflow write).
For write point ``k``, a fresh project runs the same command with point ``k`` failing as a
full disk does, then ``make resume``'s command runs with the fault removed. Every time:

- the failed run exits non-zero, with one message and no traceback, and its manifest says
  ``failed`` (never ``running``); a point before the run began (creating the MLflow
  store) leaves no manifest and no output, and the run is simply started again; with the
  disk staying full (``sticky``: ``data/`` read-only), the manifest cannot say ``failed``:
  the run says so, and reads as interrupted;
- the resumed run exits 0 and its manifest says ``finished``;
- the outputs hash the same as the clean run's (the content: Parquet rows, model weights,
  ONNX initializers, metrics without timings, the play page's files);
- every versioned file either run read is byte-identical to the complete file at that
  path at the end (so no partial version was ever read; versions are never overwritten);
- the registry has exactly one version of this run.

``tests/reliability/test_faults.py`` runs a seeded sample of points in CI; the whole sweep::

    .venv/bin/python -m tests.faults.sweep --all       # every point (prints one line each)
    .venv/bin/python -m tests.faults.sweep --sample 3  # a seeded sample, a project each
    .venv/bin/python -m tests.faults.sweep --chain     # the same sample in one project, as CI does

CI chains its sample (:func:`check_chain`): the run fails at the first point, its resume at
the second, and so on, then a last resume finishes; so it also checks that a failed resume
resumes. A later point is named by its node and its place in it (``gen_001.evaluate#12``),
as a resume numbers its points from its own start.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.faults.sitecustomize import file_sha
from tests.helpers import TINY_CLI, cli_params

REPO = Path(__file__).resolve().parents[2]
SHIM = Path(__file__).resolve().parent
KEDRO = str(Path(sys.executable).with_name("kedro"))
PARAMS = cli_params({**TINY_CLI, "alphazero.num_generations": 1})
_TIMING = re.compile(r"seconds|per_s$")
_RUN_ID = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}\.\d{3}Z")


def kedro(project: Path, *args: str, log: Path, fault_at: int = 0,
          sticky: bool = False) -> subprocess.CompletedProcess:  # fmt: skip
    """``kedro <args>`` in ``project`` with the fault shim on (point ``fault_at`` fails; 0:
    none; ``sticky``: every later point too)."""
    env = {
        "CZ_FAULT_STICKY": "1" if sticky else "0",
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SHIM), os.environ.get("PYTHONPATH")])),
        "CZ_FAULT_LOG": str(log),
        "CZ_FAULT_AT": str(fault_at),
        "CUDA_VISIBLE_DEVICES": "",
        "COLUMNS": "250",
        "OMP_NUM_THREADS": "1",
        "DO_NOT_TRACK": "1",
        "KEDRO_DISABLE_TELEMETRY": "1",
    }
    env.pop("CZ_FAULT_OWNER", None)
    return subprocess.run([KEDRO, *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def manifest(project: Path) -> dict:
    (path,) = sorted((project / "data" / "runs").glob("*.json"))
    return json.loads(path.read_text())


def _digest_file(path: Path) -> str:
    h = hashlib.sha256()
    suffix = path.suffix
    if suffix == ".parquet":
        import pandas as pd

        df = pd.read_parquet(path)
        h.update(",".join(df.columns).encode())
        h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    elif suffix == ".pt":
        import torch

        state = torch.load(path, weights_only=True)["state_dict"]
        for key in sorted(state):
            h.update(key.encode() + state[key].numpy().tobytes())
    elif suffix == ".onnx":
        import onnx
        from onnx import numpy_helper

        model = onnx.load(path)
        for tensor in sorted(model.graph.initializer, key=lambda t: t.name):
            h.update(tensor.name.encode() + numpy_helper.to_array(tensor).tobytes())
        h.update(json.dumps(sorted((p.key, p.value) for p in model.metadata_props)).encode())
    elif suffix == ".json":
        data = json.loads(path.read_text())
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not _TIMING.search(k)}
        h.update(json.dumps(data, sort_keys=True).encode())
    elif suffix == ".png":
        from PIL import Image

        with Image.open(path) as image:  # a truncated PNG fails here
            image.load()
            h.update(f"{image.size}".encode())
    else:
        h.update(path.read_bytes())
    return h.hexdigest()


def outputs(project: Path, run_id: str) -> dict[str, str]:
    """``{path with the run id as <run>: content digest}`` of every file the run wrote."""
    out = {}
    for path in sorted((project / "data").rglob("*")):
        if path.is_file() and run_id in path.parts:
            rel = str(path.relative_to(project)).replace(run_id, "<run>")
            out[rel] = _digest_file(path)
    return out


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def leftovers(project: Path) -> list[str]:
    """Files a version holds that are not complete outputs: staging siblings left behind."""
    return sorted(str(p.relative_to(project)) for p in (project / "data").rglob(".*partial-*"))


def registry_versions(project: Path, run_id: str) -> int:
    import mlflow

    store = f"sqlite:///{project / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=store, registry_uri=store)
    return sum(v.tags.get("run_id") == run_id
               for v in client.search_model_versions("name='connect-zero'"))  # fmt: skip


def clean_run(template: Path, work: Path) -> tuple[list[dict], dict[str, str]]:
    """The clean run of a copy of ``template``: its write points and its outputs' digests."""
    project = work / "clean"
    shutil.copytree(template, project)
    log = work / "clean.jsonl"
    done = kedro(project, "run", "--params", PARAMS, log=log)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_id = manifest(project)["run_id"]
    points = [e for e in events(log) if "point" in e]
    return points, outputs(project, run_id)


def _failed(project: Path, template: Path, failed, log_from: list[dict], what: str,
            sticky: bool, run_id: str | None) -> str | None:  # fmt: skip
    """The checks of a run that a fault stopped (``run_id``: the run it resumed, if any); the
    id of the run to resume, or None when it failed before the run began (the store)."""
    faults = [e for e in log_from if "fault" in e]
    assert faults, f"{what}: the fault never fired"
    what = f"{what} ({faults[0]['during']})"
    assert failed.returncode != 0, f"{what}: the run did not fail\n{failed.stdout[-2000:]}"
    assert "Traceback" not in failed.stdout + failed.stderr, (
        f"{what}: a traceback\n" + (failed.stdout + failed.stderr)[-3000:]
    )
    if not (project / "data" / "runs").is_dir():  # it failed before the run began (the store)
        assert _files(project / "data") == _files(template / "data"), f"{what}: files written"
        return None
    record = manifest(project)
    assert run_id in (None, record["run_id"]), f"{what}: a resume made a run of its own"
    out = failed.stdout + failed.stderr  # the one way to go on, not Kedro's --from-nodes
    assert f"make resume RUN={record['run_id']}" in out and "--from-nodes" not in out, what
    if sticky:  # it could not record its failure: it says so, and reads as interrupted
        from connect_zero_pipeline.run.liveness import run_status

        assert record["status"] == "running" and run_status(record) == "interrupted", what
        assert (f"Run {record['run_id']} could not be recorded as failed: its manifest "
                "cannot be written (No space left on device") in out, f"{what}: {out[-2000:]}"  # fmt: skip
        assert "is recorded as failed" not in out, what
    else:
        assert record["status"] == "failed", f"{what}: manifest {record['status']}"
        assert "No space left on device" in record.get("error", ""), f"{what}: {record}"
    return record["run_id"]


def _run(project: Path, log: Path, run_id: str | None, fault_at: int | str = 0,
         sticky: bool = False) -> subprocess.CompletedProcess:  # fmt: skip
    """The run again (``run_id`` None) or ``make resume``'s command for ``run_id``."""
    if run_id is None:
        return kedro(project, "run", "--params", PARAMS, log=log, fault_at=fault_at,
                     sticky=sticky)  # fmt: skip
    return kedro(project, "run", "--only-missing-outputs", "--params",
                 f"{PARAMS},resume={run_id}", log=log, fault_at=fault_at, sticky=sticky)  # fmt: skip


def _whole(project: Path, log: Path, clean: dict[str, str], what: str) -> int:
    """The run finished whole: its outputs are the clean run's, no run read a partial
    version, the registry has the run once. The number of loads checked."""
    run_id = manifest(project)["run_id"]
    assert manifest(project)["status"] == "finished", what
    got = outputs(project, run_id)
    assert got == clean, f"{what}: outputs differ: " + str(
        sorted(k for k in set(got) | set(clean) if got.get(k) != clean.get(k))
    )
    loads = [e for e in events(log) if "load" in e]
    for load in loads:
        assert file_sha(Path(load["path"])) == load["sha"], f"{what}: read a partial {load['path']}"
    assert registry_versions(project, run_id) == 1, f"{what}: registry versions"
    return len(loads)


def check_point(template: Path, work: Path, k: int, clean: dict[str, str],
                sticky: bool = False) -> dict:  # fmt: skip
    """Fail write point ``k`` (``sticky``: and every later one, so the run cannot record its
    failure), resume, and check everything the module docstring lists."""
    project = work / f"point_{k:03d}{'_sticky' if sticky else ''}"
    shutil.copytree(template, project)
    log = work / f"{project.name}.jsonl"
    failed = _run(project, log, None, fault_at=k, sticky=sticky)
    what = f"point {k}"
    run_id = _failed(project, template, failed, events(log), what, sticky, None)
    resumed = _run(project, log, run_id)  # resumed, or (no run began) run again
    assert resumed.returncode == 0, f"{what}: resume failed\n{resumed.stderr[-3000:]}"
    faults = [e for e in events(log) if "fault" in e]
    return {"point": k, "during": faults[0]["during"], "loads": _whole(project, log, clean, what)}


def check_chain(template: Path, work: Path, chosen: list[int], points: list[dict],
                clean: dict[str, str]) -> list[dict]:  # fmt: skip
    """One project, one fault a run: the run fails at the first of ``chosen`` (the clean
    run's numbering), its resume at the second, that resume's resume at the third, ...,
    each a point of the same node as in the clean run (``<node>#<n>``: a resume's points
    are numbered from its own start), then a last resume finishes: every failed run is
    checked as :func:`check_point` checks one, and the end as a resumed run's. A dataset
    save's fault is sticky (``data/`` read-only from then on). As many runs as faults, plus
    one, where :func:`check_point` takes two a fault."""
    by_point = {e["point"]: e for e in points}
    chosen = sorted(chosen)
    project = work / ("chain_" + "_".join(f"{k:03d}" for k in chosen))
    shutil.copytree(template, project)
    log = work / f"{project.name}.jsonl"
    run_id, reports = None, []
    for i, k in enumerate(chosen):
        point = by_point[k]
        if i and point["node"] == "<run>":
            raise ValueError(f"point {k} ({point['name']}) is outside any node: only a run's "
                             "first fault can be named by its number")  # fmt: skip
        at = k if i == 0 else f"{point['node']}#{point['nth']}"
        sticky = point["kind"] == "dataset"
        seen = len(events(log))
        failed = _run(project, log, run_id, fault_at=at, sticky=sticky)
        what = f"point {k} = {at}{' (sticky)' if sticky else ''}"
        run_id = _failed(project, template, failed, events(log)[seen:], what, sticky, run_id)
        fault = next(e for e in events(log)[seen:] if "fault" in e)
        reports.append({"point": k, "at": at, "kind": point["kind"], "during": fault["during"]})
    resumed = _run(project, log, run_id)
    assert resumed.returncode == 0, f"chain {chosen}: resume failed\n{resumed.stderr[-3000:]}"
    loads = _whole(project, log, clean, f"chain {chosen}")
    return [{**r, "loads": loads} for r in reports]


def sample(points: list[dict], size: int, seed: int) -> list[int]:
    """``size`` points drawn by ``seed``, one of each kind first (dataset, manifest, mlflow)."""
    rng = random.Random(seed)
    by_kind: dict[str, list[int]] = {}
    for e in points:
        by_kind.setdefault(e["kind"], []).append(e["point"])
    chosen = [rng.choice(by_kind[kind]) for kind in sorted(by_kind)][:size]
    rest = [e["point"] for e in points if e["point"] not in chosen]
    return sorted(chosen + rng.sample(rest, max(0, size - len(chosen))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="every write point")
    parser.add_argument("--points", default=None, help="a range of write points, e.g. 120-229")
    parser.add_argument("--sample", type=int, default=3, help="points to sample (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chain", action="store_true",
                        help="the chosen points' faults in one project, one a run (as CI)")  # fmt: skip
    parser.add_argument("--work", default=None, help="folder for the projects (default: a tmp)")
    args = parser.parse_args(argv)
    import tempfile

    sys.path.insert(0, str(REPO))
    from tests.helpers import PONS_FILE, make_project, tiny_pons_set, write_versioned_parquet

    work = Path(args.work or tempfile.mkdtemp(prefix="fault-sweep-"))
    template = make_project(work / "template", pin_store=False)  # each copy its own store
    write_versioned_parquet(template, PONS_FILE, tiny_pons_set())
    start = time.perf_counter()
    points, clean = clean_run(template, work)
    kinds = {k: sum(e["kind"] == k for e in points) for k in sorted({e["kind"] for e in points})}
    print(json.dumps({"write_points": len(points), "by_kind": kinds,
                      "clean_seconds": round(time.perf_counter() - start, 1)}), flush=True)  # fmt: skip
    chosen = [e["point"] for e in points] if args.all else sample(points, args.sample, args.seed)
    if args.points:
        first, _, last = args.points.partition("-")
        chosen = [k for k in (e["point"] for e in points) if int(first) <= k <= int(last or first)]
    failures = 0
    if args.chain:
        try:
            for report in check_chain(template, work, chosen, points, clean):
                print(json.dumps({**report, "ok": True}), flush=True)
        except AssertionError as exc:
            failures += 1
            print(json.dumps({"chain": chosen, "ok": False, "error": str(exc)[:2000]}))
    else:
        for k in chosen:
            t0 = time.perf_counter()
            try:
                report = check_point(template, work, k, clean)
                report["ok"] = True
            except AssertionError as exc:
                failures += 1
                report = {"point": k, "ok": False, "error": str(exc)[:2000]}
            report["seconds"] = round(time.perf_counter() - t0, 1)
            print(json.dumps(report), flush=True)
    print(json.dumps({"checked": len(chosen), "failed": failures,
                      "seconds": round(time.perf_counter() - start, 1)}))  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

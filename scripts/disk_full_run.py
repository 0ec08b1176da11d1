"""A real disk-full run: a project on a small tmpfs, runs until the disk fills, then resume.

Needs ``mount`` (root, or a container allowed to mount tmpfs). Usage::

    sudo .venv/bin/python scripts/disk_full_run.py [--size-mb 30] [--runs 4]

1. Mounts a tmpfs of ``--size-mb`` MB and makes a project there (the tiny recipe of the
   tests: one generation and the export, the MLflow store in the project).
2. Runs ``kedro run`` again and again until one fails (the disk is full).
3. Checks the failed run: a non-zero exit with one message and no traceback, its manifest
   ``failed`` (or, when not even that could be written, ``interrupted`` to ``runs``), no
   staging file left, and every version on disk complete (each loads).
4. Grows the tmpfs, resumes the failed run with ``make resume``'s command, and checks it
   finishes with a complete play page and one registry version.

Prints one JSON line per step, with the figures the closing note quotes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.faults.sweep import PARAMS, _digest_file, leftovers, registry_versions  # noqa: E402
from tests.helpers import PONS_FILE, make_project, tiny_pons_set, write_versioned_parquet  # noqa: E402

KEDRO = str(Path(sys.executable).with_name("kedro"))


def kedro(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "250", "OMP_NUM_THREADS": "1", "DO_NOT_TRACK": "1",
           "KEDRO_DISABLE_TELEMETRY": "1", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    import os

    return subprocess.run([KEDRO, *args], cwd=project, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=1800)  # fmt: skip


def versions_load(project: Path) -> int:
    """Load every file under data/ (content digests): raises on a truncated one; returns the count."""
    count = 0
    for path in (project / "data").rglob("*"):
        if path.is_file() and path.suffix in {".parquet", ".pt", ".onnx", ".json", ".png"}:
            _digest_file(path)
            count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=30)
    parser.add_argument("--runs", type=int, default=6, help="runs to try before giving up")
    args = parser.parse_args()
    mount = Path(tempfile.mkdtemp(prefix="disk-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.size_mb}m", "tmpfs", str(mount)],
                   check=True)  # fmt: skip
    try:
        project = make_project(mount / "project", pin_store=False)
        write_versioned_parquet(project, PONS_FILE, tiny_pons_set())
        failed = None
        for attempt in range(1, args.runs + 1):
            t0 = time.perf_counter()
            res = kedro(project, "run", "--params", PARAMS)
            used = shutil.disk_usage(mount)
            print(json.dumps({"run": attempt, "exit": res.returncode,
                              "seconds": round(time.perf_counter() - t0, 1),
                              "used_mb": round(used.used / 2**20, 1)}), flush=True)  # fmt: skip
            if res.returncode != 0:
                failed = res
                break
        if failed is None:
            print(json.dumps({"error": f"the disk never filled in {args.runs} runs"}))
            return 1
        out = failed.stdout + failed.stderr
        from connect_zero_pipeline.commands.runs import runs_table
        from connect_zero_pipeline.run.liveness import run_status
        from connect_zero_pipeline.run.manifest import known_runs, read_manifest

        run_id = known_runs(project)[-1]
        manifest = read_manifest(project, run_id)
        error_lines = [line for line in out.splitlines() if line.startswith("Error:")]
        print(json.dumps({
            "failed_run": run_id,
            "traceback": "Traceback" in out,
            "message": error_lines[-1][:300] if error_lines else None,
            "manifest": manifest["status"],
            "status": run_status(manifest),
            "error": manifest.get("error", "")[:200],
            "staging_left": leftovers(project),
            "files_loaded_ok": versions_load(project),
            "registry_versions_of_failed_run": registry_versions(project, run_id),
        }), flush=True)  # fmt: skip
        subprocess.run(["mount", "-o", f"remount,size={args.size_mb * 4}m", str(mount)],
                       check=True)  # fmt: skip
        resumed = kedro(project, "run", "--only-missing-outputs", "--params",
                        f"{PARAMS},resume={run_id}")  # fmt: skip
        manifest = read_manifest(project, run_id)
        page = project / "data/08_reporting/play" / run_id / "play"
        print(json.dumps({
            "resume_exit": resumed.returncode,
            "manifest": manifest["status"],
            "page_files": sorted(p.name for p in page.iterdir()) if page.is_dir() else None,
            "staging_left": leftovers(project),
            "files_loaded_ok": versions_load(project),
            "registry_versions": registry_versions(project, run_id),
        }), flush=True)  # fmt: skip
        print(runs_table(project))
        ok = resumed.returncode == 0 and manifest["status"] == "finished"
        return 0 if ok else 1
    finally:
        # -l: this process's MLflow client may still hold the store open
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


if __name__ == "__main__":
    sys.exit(main())

"""What a run says when the machine stops it: the fix that fits the error, and a way to go on
that works (tests/faults has the same with real runs and a full disk)."""

from __future__ import annotations

import errno

from connect_zero_pipeline.commands.run import _resume_hint, user_error
from connect_zero_pipeline.common.errors import mark_run
from connect_zero_pipeline.run.manifest import write_manifest

RUN = "2026-11-28T02.13.08.000Z"


def test_a_full_disk_and_a_place_that_cannot_be_written_get_their_own_fix():
    full = OSError(errno.ENOSPC, "No space left on device", "data/06_models/x.pt")
    assert user_error(full, []) == ("No space left on device (data/06_models/x.pt). Free space, "
                                    "then run the same command again.")  # fmt: skip
    denied = PermissionError(errno.EACCES, "Permission denied", "data/runs/x.json")
    said = user_error(denied, [])
    assert "Free space" not in said and "Make data/runs/x.json writable" in said
    read_only = OSError(errno.EROFS, "Read-only file system")
    assert "Make the project's data/ writable" in user_error(read_only, [])
    mark_run(denied, RUN)  # a run had begun: the way on is below the message
    assert user_error(denied, []).endswith("then go on as below.")


def test_a_run_never_recorded_is_not_told_to_resume(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the project: here
    error = PermissionError(errno.EACCES, "Permission denied", "data/runs")
    mark_run(error, RUN, "Permission denied (data/runs)")
    assert _resume_hint(error, "failed")
    said = capsys.readouterr().err
    assert "make resume" not in said and "there is no run to resume" in said
    assert "run the same command again" in said
    # Its start was recorded, its end was not: the resume works, and says so.
    write_manifest(tmp_path, {"run_id": RUN, "status": "running", "params": {}})
    assert _resume_hint(error, "failed")
    said = capsys.readouterr().err
    assert "could not be recorded as failed" in said and f"make resume RUN={RUN}" in said

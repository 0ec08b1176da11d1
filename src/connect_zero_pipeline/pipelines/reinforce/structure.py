"""The shape of the unrolled REINFORCE DAG: ``reinforce.num_chunks``."""

from __future__ import annotations

from ..structure import section


def num_chunks() -> int:
    """``reinforce.num_chunks`` of the run being built, validated."""
    return section("reinforce").num_chunks

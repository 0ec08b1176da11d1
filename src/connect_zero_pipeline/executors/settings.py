"""``NodeSettings``: where a node's work runs, the one type of every node that runs work.

Every parameter section of a stage that computes (``selfplay``, ``train``, ``evaluate``,
``pons``, ``ladder``, ``baselines``, ``scorecard``, ``reinforce.train``,
``reinforce.evaluate``) has a ``node`` mapping of these keys. None of them changes a
result: a generation's table, a labelled set or a rating is the same wherever it ran
(up to float rounding between backends and devices). A stage reads the keys that apply
to it: ``executor``, ``workers`` and ``ray`` to the stages that fan out (self-play and
the solver's labelling), ``backend`` to those that search with a network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.config import check, is_int
from ..core.config.search import BACKENDS, COMPILE
from .ray_cluster import RayOptions

if TYPE_CHECKING:
    import torch

EXECUTORS = ("local", "ray")
ROUTING = ("executor", "workers", "ray")
"""The :class:`NodeSettings` fields that choose where shards run; every other field travels
with each shard to the function that plays it (:meth:`NodeSettings.shard_kwargs`)."""


@dataclass(frozen=True)
class NodeSettings:
    """Where a node runs; never what it computes (the ``node`` key of a parameter section)."""

    device: str = "auto"
    """``auto`` (CUDA when available), ``cpu`` or ``cuda[:N]``."""
    num_threads: int | None = 1
    """CPU threads of the node's network (torch, or onnxruntime in a search; null: the
    library's default, one per core)."""
    backend: str = "auto"
    """A search's network evaluation: ``auto`` (onnxruntime on CPU, torch on CUDA),
    ``torch`` or ``onnxruntime``."""
    compile: str | bool = "auto"
    """A search's device path compiled (``core.search.compiled``): ``on`` (inductor: for long runs,
    minutes the first time on a machine), ``off``, ``auto`` (= off: nothing compiled at a
    run's start), or ``eager``/``aot_eager`` (trace only, to debug graphs; no speed-up).
    YAML reads a bare ``on``/``off`` as true/false: those mean ``on``/``off`` too."""
    compile_cache: str | None = ".cache/torch_compile"
    """Where inductor keeps what it compiled, relative to the folder the stage runs in (the
    project under ``kedro run``): a later run on the same machine loads it instead of
    compiling. null: ``TORCHINDUCTOR_CACHE_DIR``, or torch's temporary folder."""
    executor: str = "local"
    """``local`` (this machine) or ``ray`` (a Ray cluster: self-play shards on actors,
    solver chunks as tasks; ``docs/scaling.md``)."""
    workers: int = 0
    """Local executor: worker processes, one shard or chunk each at a time (0: one per
    core; 1: in this process)."""
    ray: RayOptions = field(default_factory=RayOptions)
    """Ray executor: the cluster's address and the actors' resources."""

    def __post_init__(self):
        check(isinstance(self.device, str), "device", self.device, "'auto', 'cpu' or 'cuda[:N]'")
        check(self.num_threads is None or (is_int(self.num_threads) and self.num_threads >= 1),
              "num_threads", self.num_threads, "null or an integer >= 1")  # fmt: skip
        check(self.backend in BACKENDS, "backend", self.backend, f"one of {BACKENDS}")
        if isinstance(self.compile, bool):  # YAML 1.1: `compile: on` arrives as True
            object.__setattr__(self, "compile", "on" if self.compile else "off")
        check(self.compile in COMPILE, "compile", self.compile, f"one of {COMPILE}")
        check(self.compile_cache is None or (isinstance(self.compile_cache, str)
              and self.compile_cache.strip() != ""), "compile_cache", self.compile_cache,
              "null or a folder")  # fmt: skip
        check(self.executor in EXECUTORS, "executor", self.executor, "'local' or 'ray'")
        check(is_int(self.workers) and self.workers >= 0, "workers", self.workers,
              "an integer >= 0")  # fmt: skip
        check(isinstance(self.ray, RayOptions), "ray", self.ray, "a mapping of Ray options")

    def shard_kwargs(self, device: torch.device) -> dict:
        """What a self-play shard takes from this node, whatever runs it (this process, a
        local worker, a Ray actor): :func:`~..core.selfplay.self_play`'s keyword arguments,
        with ``device`` as the executor resolved it where the shard runs. Every field but
        :data:`ROUTING` is here, so no executor can drop one."""
        return {"device": device, "num_threads": self.num_threads, "backend": self.backend,
                "compile": self.compile, "compile_cache": self.compile_cache}  # fmt: skip

    def local_workers(self, device: torch.device | None = None) -> int:
        """Worker processes to use: ``workers``, or one per core (always 1 off the CPU)."""
        if device is not None and device.type != "cpu":
            return 1
        return self.workers or os.cpu_count() or 1

"""Where the work runs: this process, local worker processes, or a Ray cluster.

``core`` holds the pure functions that play one self-play shard
(:func:`~connect_zero_pipeline.core.selfplay.self_play` with ``shard_index``)
and solve one chunk of positions
(:func:`~connect_zero_pipeline.core.labelling.solve_chunk`). This package runs
many of them at once: :mod:`.local` on every core of this machine, :mod:`.ray`
on a Ray cluster. None of it changes a result: a generation's table and a
labelled set are the same on any executor.

The parameter sections spell the executor's settings as below
(:class:`ExecutorSettings`, part of ``selfplay``; ``pons`` has its own).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd
import torch

from ..core.config import NodeSettings, check, is_int, resolve_device
from ..core.selfplay import SelfPlayConfig, self_play

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class SelfPlayNodeSettings(NodeSettings):
    """Where self-play runs on this machine (section ``selfplay``). None change the table."""

    workers: int = 0
    """Local executor: CPU worker processes, one shard each (0: one per core; 1: in-process)."""

    def __post_init__(self):
        super().__post_init__()
        check(
            is_int(self.workers) and self.workers >= 0, "workers", self.workers, "an integer >= 0"
        )

    def local_workers(self, device: torch.device) -> int:
        """Worker processes to use: ``workers``, or one per core (always 1 off the CPU)."""
        if device.type != "cpu":
            return 1
        return self.workers or os.cpu_count() or 1


@dataclass(frozen=True)
class ExecutorSettings:
    """Which executor plays self-play, and the Ray executor's settings (section ``selfplay``)."""

    executor: str = "local"
    """``local`` (this machine) or ``ray`` (shards on Ray actors)."""
    ray_address: str | None = None
    """``auto``, ``host:port`` or ``ray://host:port`` (null: ``RAY_ADDRESS``, else ``auto``)."""
    num_shards: int = 0
    """Shards per generation (0: one per actor that fits on the cluster)."""
    num_cpus: float = 1
    """CPUs per actor."""
    num_gpus: float | str = "auto"
    """GPUs per actor (``auto``: 1 if the cluster has GPUs, else 0); the device is then per actor."""
    max_retries: int = 3
    """Restarts of an actor that died (its shard is replayed)."""

    def __post_init__(self):
        check(self.executor in EXECUTORS, "executor", self.executor, "'local' or 'ray'")
        self.ray_options()  # every Ray setting is checked, whichever executor is chosen

    def ray_options(self):
        """The :class:`~.ray_cluster.RayOptions` these settings spell."""
        from .ray_cluster import RayOptions

        return RayOptions(
            address=self.ray_address,
            num_shards=self.num_shards,
            num_cpus=self.num_cpus,
            num_gpus=self.num_gpus,
            max_retries=self.max_retries,
        )


def play_generation(
    config: SelfPlayConfig,
    model: torch.nn.Module,
    generation: int,
    node: SelfPlayNodeSettings,
    executor: ExecutorSettings,
) -> pd.DataFrame:
    """One generation of self-play on the configured executor (the same table on any of them)."""
    if executor.executor == "ray":  # shards on Ray actors (each picks its own device)
        from .ray import ray_self_play

        return ray_self_play(
            config,
            model,
            generation=generation,
            options=executor.ray_options(),
            num_threads=node.num_threads,
            progress=True,
        )
    device = resolve_device(node.device)
    workers = node.local_workers(device)
    if workers > 1:  # shards on CPU worker processes: the same table, every core busy
        from .local import local_self_play

        return local_self_play(
            config,
            model,
            workers=workers,
            generation=generation,
            num_threads=node.num_threads,
            progress=True,
        )
    return self_play(
        config,
        model=model,
        device=device,
        generation=generation,
        progress=True,
        num_threads=node.num_threads,
    )


def chunk_runner(executor: str, workers: int, *, ray_address=None, max_retries: int = 3):
    """A :class:`~connect_zero_pipeline.core.labelling.Labeller` runner for ``executor``.

    ``local``: ``workers`` processes (0: one per core; 1: this process).
    ``ray``: tasks on the cluster at ``ray_address`` (connects now: a bad address fails here).
    """
    if executor == "ray":
        from .ray import ray_chunk_runner

        return ray_chunk_runner(ray_address, max_retries=max_retries)
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        from ..core.labelling import serial_chunks

        return serial_chunks
    from .local import ProcessChunkRunner

    return ProcessChunkRunner(workers)

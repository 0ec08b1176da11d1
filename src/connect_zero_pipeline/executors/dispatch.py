"""Run a stage's work on the executor its ``node`` names: a self-play generation
(:func:`play_generation`) or the solver's chunks (:func:`chunk_runner`)."""

from __future__ import annotations

import torch

from ..core.config.selfplay import SelfPlayConfig
from ..core.device import resolve_device
from ..core.labelling import serial_chunks
from ..core.selfplay import Played, play_games
from .local import ProcessChunkRunner, local_self_play
from .ray import ray_chunk_runner, ray_self_play
from .settings import NodeSettings


def play_generation(
    config: SelfPlayConfig,
    model: torch.nn.Module,
    generation: int,
    node: NodeSettings,
) -> Played:
    """One generation of self-play on the configured executor (the same table on any of them).

    Every path hands each shard ``node`` whole and plays it with
    :meth:`~.settings.NodeSettings.shard_kwargs`: no executor drops a setting. Its
    ``compile_s`` is the longest any process spent compiling the search (processes compile
    side by side)."""
    if node.executor == "ray":  # shards on Ray actors (each resolves node.device itself)
        return ray_self_play(config, model, generation=generation, node=node, progress=True)
    device = resolve_device(node.device)
    if device.type == "cpu":  # worker processes, every core busy (one: this process)
        return local_self_play(config, model, workers=node.local_workers(device),
                               generation=generation, node=node, progress=True)  # fmt: skip
    return play_games(config, model=model, generation=generation, progress=True,
                      **node.shard_kwargs(device))  # the device plays every game at once  # fmt: skip


def chunk_runner(node: NodeSettings):
    """A :class:`~connect_zero_pipeline.core.labelling.Labeller` runner for ``node``'s executor.

    ``local``: ``workers`` processes (0: one per core; 1: this process).
    ``ray``: tasks on the cluster at ``ray.address`` (connects now: a bad address fails here).
    """
    if node.executor == "ray":
        return ray_chunk_runner(node.ray.address, max_retries=node.ray.max_retries,
                                connect_timeout=node.ray.connect_timeout)  # fmt: skip
    workers = node.local_workers()
    if workers == 1:
        return serial_chunks

    return ProcessChunkRunner(workers)

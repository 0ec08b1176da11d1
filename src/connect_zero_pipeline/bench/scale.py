"""``bench scale``: self-play on Ray actors, 1 vs 2 workers, and the Ray path vs ``local``.

A fixed amount of self-play work (``tiny`` model, 256 slots x 16 sims x 24
moves = 6,144 searched positions; ``--quick``: 64 x 8 x 8) is timed five
ways, in rotating order, 3 rounds (``--quick``: 2), so drift from other
processes on the shared machine hits all alike; the best time of each is kept:

- ``local``: :func:`~..core.selfplay.self_play` in this process (1 thread; the
  config's default backend, onnxruntime on CPU);
- ``ray_1``: the same generation as 1 shard on 1 Ray actor (1 CPU);
- ``ray_2``: 2 shards on 2 actors (1 CPU each);
- ``procs_1``, ``procs_2``: the same 1 or 2 shards in a plain 2-process pool
  (no Ray), the reference for what 2 workers can get on this machine right now.

The cluster is started (or joined) and the actors are built and warmed before
any timing, so Ray start-up is excluded: the figures are steady-state
throughput, what a long generation sees. Positions are env steps (searched
and played positions, ``num_games * moves_per_gen``), as in ``bench mcts``.

Figures:

- ``ray_2_workers_positions_per_s`` vs ``ray_1_worker``: the speed-up of a
  second worker (target >= 1.6 on 2 idle cores; other people's jobs take
  cores from the second worker first);
- ``procs_2_workers_positions_per_s`` vs ``procs_1_worker``: the same
  speed-up without Ray. If other jobs hold the cores, this one drops as
  much as the Ray one: the machine is saturated, and Ray is not the cause;
- ``ray_1_worker_positions_per_s`` vs ``local``: ``ratio`` < 1 is the Ray
  path's cost; ``ray_overhead`` is ``t_ray_1 / t_local - 1`` (target <= 0.10).

The cluster is ``RAY_ADDRESS`` when set, else a throw-away 2-CPU local one.
Every line carries the 1-minute load average at the end of the run.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import torch

from ..core.checkpoint import checkpoint_dict, from_dict
from ..core.config.selfplay import SEARCH, SelfPlayConfig
from ..core.inference import make_evaluate_fn
from ..core.models import build_model
from ..core.selfplay import DEFAULT_NUM_THREADS, merge_shards, self_play
from ..executors.ray import RayOptions, RaySelfPlayPool
from ..executors.settings import NodeSettings
from . import figure

_PROC_EVALUATE_FN = None


def _proc_init(weights: dict, backend: str) -> None:
    global _PROC_EVALUATE_FN
    _PROC_EVALUATE_FN = make_evaluate_fn(from_dict(weights, "bench weights"), "cpu", backend)


def _proc_shard(cfg: SelfPlayConfig, shard_index: int, num_shards: int):
    return self_play(cfg, _PROC_EVALUATE_FN, shard_index=shard_index, num_shards=num_shards)


def _procs_play(pool: ProcessPoolExecutor, cfg: SelfPlayConfig, num_shards: int):
    futures = [pool.submit(_proc_shard, cfg, i, num_shards) for i in range(num_shards)]
    return merge_shards([f.result() for f in futures])


def run(args) -> Iterator[dict]:
    quick = bool(getattr(args, "quick", False))
    cfg = SelfPlayConfig(
        num_games=64 if quick else 256,
        mcts=dataclasses.replace(SEARCH, sims=8 if quick else 16),
        moves_per_gen=8 if quick else 24,
        seed=0,
    )
    rounds = 2 if quick else 3
    positions = cfg.num_games * cfg.moves_per_gen
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    address = os.environ.get("RAY_ADDRESS") or "local"
    if address == "local" and "RAY_AUTH_MODE" not in os.environ:
        # Token auth with a token for this process only: a new local cluster would otherwise
        # write ~/.ray/auth_token, which turns on auth for every later `ray start` here.
        os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    options = RayOptions(address=address, num_shards=2, num_cpus=1, num_gpus=0)
    backend = "auto"
    # Every path builds its evaluate_fn (for ``auto``: the onnxruntime graph) once, outside
    # the timing, as the actors do: the figures compare playing, not model export.
    evaluate_fn = make_evaluate_fn(model, "cpu", backend)
    procs = ProcessPoolExecutor(
        2,
        mp_context=get_context("spawn"),
        initializer=_proc_init,
        initargs=(checkpoint_dict(model), backend),
    )
    node = NodeSettings(executor="ray", ray=options, num_threads=DEFAULT_NUM_THREADS,
                        backend=backend)  # fmt: skip
    pool = RaySelfPlayPool(model, node)
    with procs, pool:
        if pool.num_actors < 2:
            raise RuntimeError(f"bench scale needs a cluster with 2 CPUs, got {pool.num_actors}")
        pool.wait_ready()
        # First-call costs (allocator, oneDNN primitives) for every batch shape timed below.
        warm = dataclasses.replace(cfg, moves_per_gen=2)
        pool.play(warm, num_shards=1)
        pool.play(warm, num_shards=2)
        self_play(warm, evaluate_fn, num_threads=DEFAULT_NUM_THREADS)
        for _ in range(2):  # each pool process, both shapes (a free process takes the next task)
            _procs_play(procs, warm, 2)
        _procs_play(procs, warm, 1)

        runs = {
            "local": lambda: self_play(cfg, evaluate_fn, num_threads=DEFAULT_NUM_THREADS),
            "ray_1": lambda: pool.play(cfg, num_shards=1),
            "ray_2": lambda: pool.play(cfg, num_shards=2),
            "procs_1": lambda: _procs_play(procs, cfg, 1),
            "procs_2": lambda: _procs_play(procs, cfg, 2),
        }
        times: dict[str, list[float]] = {k: [] for k in runs}
        order = list(runs)
        for r in range(rounds):
            k = r % len(order)
            for name in order[k:] + order[:k]:  # rotate who goes first
                start = time.perf_counter()
                runs[name]()
                times[name].append(time.perf_counter() - start)
    best = {k: min(v) for k, v in times.items()}
    rate = {k: positions / t for k, t in best.items()}
    common = {
        "model": "tiny",
        "backend": backend,
        "num_games": cfg.num_games,
        "sims": cfg.mcts.sims,
        "moves_per_gen": cfg.moves_per_gen,
        "rounds": rounds,
        "cluster": address,
        "load_1min": round(os.getloadavg()[0], 2),
    }
    seconds = {f"seconds_{k}": [round(t, 2) for t in v] for k, v in times.items()}
    yield figure(
        "scale",
        "ray_2_workers_positions_per_s",
        rate["ray_2"],
        baseline=rate["ray_1"],
        target_ratio=1.6,
        **common,
        **seconds,
    )
    yield figure(
        "scale",
        "procs_2_workers_positions_per_s",
        rate["procs_2"],
        baseline=rate["procs_1"],
        **common,
    )
    yield figure(
        "scale",
        "ray_1_worker_positions_per_s",
        rate["ray_1"],
        baseline=rate["local"],
        **common,
    )
    yield figure(
        "scale",
        "ray_overhead",
        best["ray_1"] / best["local"] - 1.0,
        target=0.10,
        **common,
    )

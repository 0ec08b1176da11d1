"""Scale out on a Ray cluster: sharded self-play on actors, solver chunks as tasks (design §8).

Two entry points, both used from inside the existing Kedro nodes (the DAG,
the catalog and kedro-mlflow do not change):

- :func:`ray_self_play` (or a reusable :class:`RaySelfPlayPool`) splits one
  generation's game slots into ``num_shards`` contiguous ranges
  (:func:`~.selfplay.shard_slots`) and plays them on Ray actors. Each actor
  rebuilds the network once from one ``ray.put`` of its checkpoint dict and
  runs on a GPU when Ray assigned it one. Shards come back as Arrow tables and
  are merged in shard order (:func:`~.selfplay.merge_shards`), which gives the
  single-shard table: every slot draws from its own counter-based stream keyed
  by its *global* index (see :mod:`.selfplay`), so the shard count is a
  hardware setting, not lineage.
- :func:`ray_chunk_runner` is the ``run_chunks`` hook of
  :class:`~.labelling.Labeller`: solver chunks go out as Ray tasks and come
  back as they finish; the labeller merges them into its cache.

Faults: actors restart (``max_restarts``) and re-run the shard they were
playing (``max_task_retries``); solver tasks are retried (``max_retries``).
A shard or a chunk is a pure function of its inputs, so a retried one returns
the same rows: nothing is lost and nothing is doubled (results are keyed by
shard or chunk index, never appended per attempt).

Addresses: ``auto`` (the cluster ``ray start`` last started on this machine),
``host:port`` (the head's GCS port, from a machine of the cluster), or
``ray://host:port`` (Ray Client, from anywhere); ``None`` reads
``RAY_ADDRESS`` and falls back to ``auto``. ``local`` starts a throw-away
single-machine cluster in this process. Before anything is submitted the
address is checked (:func:`check_reachable`: a TCP connect, then a request for
the cluster id, each with a short timeout), so a wrong or dead address, a port
that is no Ray head, or a head that wants a token this process lacks fails in
seconds with :class:`RayClusterUnreachable` naming the address, instead of
after Ray's own retries.

Ray is imported lazily: importing this module needs no Ray, and without the
``ray`` extra the executor fails with an error that says how to install it.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .checkpoint import checkpoint_dict
from .config import check
from .labelling import ChunkRunner, solve_chunk
from .selfplay import DEFAULT_NUM_THREADS, SelfPlayConfig, merge_shards, self_play, shard_slots

log = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds for the reachability check of an address
_RAY_CLIENT_PORT = 10001  # Ray Client's default port when ``ray://host`` has none


class RayClusterUnreachable(ConnectionError):
    """The Ray cluster address cannot be reached (raised before any work is submitted)."""


# Node-level settings of the Ray executor in a parameter section, with their defaults
# (next to ``device`` and ``num_threads``; none of them is part of SelfPlayConfig).
RAY_SETTINGS: dict[str, Any] = {
    "executor": "local",
    "ray_address": None,
    "num_shards": 0,
    "num_cpus": 1,
    "num_gpus": "auto",
    "max_retries": 3,
}
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RayOptions:
    """Where and how the Ray executor runs. None of these change the results.

    The parameter sections spell ``address`` as ``ray_address``.
    """

    address: str | None = None
    """``auto``, ``host:port``, ``ray://host:port`` or ``local``; None: ``RAY_ADDRESS`` or ``auto``."""
    num_shards: int = 0
    """Self-play shards per generation (0: one per actor that fits on the cluster)."""
    num_cpus: float = 1.0
    """CPUs reserved per self-play actor (and torch threads are set separately)."""
    num_gpus: float | str = "auto"
    """GPUs per self-play actor; ``auto``: 1 when the cluster has GPUs, else 0."""
    max_retries: int = 3
    """Restarts of a dead actor (and re-runs of its shard), or retries of a dead solver task."""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    """Seconds to wait for the address to answer before giving up."""

    def __post_init__(self):
        check(
            self.address is None or isinstance(self.address, str),
            "ray_address",
            self.address,
            "null, 'auto', 'local', 'host:port' or 'ray://host:port'",
        )
        check(
            _is_int(self.num_shards) and self.num_shards >= 0,
            "num_shards",
            self.num_shards,
            "an integer >= 0 (0: one per actor)",
        )
        check(
            _is_num(self.num_cpus) and self.num_cpus > 0, "num_cpus", self.num_cpus, "a number > 0"
        )
        check(
            self.num_gpus == "auto" or (_is_num(self.num_gpus) and self.num_gpus >= 0),
            "num_gpus",
            self.num_gpus,
            "'auto' or a number >= 0",
        )
        check(
            _is_int(self.max_retries) and self.max_retries >= 0,
            "max_retries",
            self.max_retries,
            "an integer >= 0",
        )
        check(
            _is_num(self.connect_timeout) and self.connect_timeout > 0,
            "connect_timeout",
            self.connect_timeout,
            "a number of seconds > 0",
        )
        if self.address is not None:
            _parse_address(self.address)  # a malformed address fails here, naming itself

    @classmethod
    def from_settings(cls, settings: dict[str, Any], section: str) -> RayOptions | None:
        """Options from a section's :data:`RAY_SETTINGS` keys; None for ``executor: local``.

        Raises:
            ValueError: naming ``section`` and the bad key (an unknown executor too).
        """
        executor = settings.get("executor", "local")
        if executor not in EXECUTORS:
            raise ValueError(f"{section}.executor must be 'local' or 'ray', got {executor!r}")
        if executor == "local":
            return None
        try:
            return cls(
                address=settings.get("ray_address"),
                num_shards=settings.get("num_shards", 0),
                num_cpus=settings.get("num_cpus", 1),
                num_gpus=settings.get("num_gpus", "auto"),
                max_retries=settings.get("max_retries", 3),
            )
        except ValueError as exc:
            raise ValueError(f"invalid parameters in '{section}': {exc}") from None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ---------------------------------------------------------------------------
# Connecting
# ---------------------------------------------------------------------------


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "executor: ray needs Ray, which is not installed; install the extra with "
            "pip install -e '.[ray]' (make installs it by default)"
        ) from exc
    return ray


def _parse_address(address: str) -> tuple[str, str | None, int | None]:
    """``address -> (kind, host, port)``; kind is ``auto``, ``local``, ``gcs`` or ``client``."""
    if address in ("auto", "local"):
        return address, None, None
    kind, rest = (
        ("client", address[len("ray://") :]) if address.startswith("ray://") else ("gcs", address)
    )
    host, sep, port = rest.rpartition(":")
    if kind == "client" and not sep:
        host, port = rest, str(_RAY_CLIENT_PORT)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"ray_address must be 'auto', 'local', 'host:port' or 'ray://host:port', got {address!r}"
        )
    return kind, host.strip("[]"), int(port)


def resolve_address(address: str | None) -> str:
    """The address to connect to: ``address``, else ``RAY_ADDRESS``, else ``auto``."""
    return address or os.environ.get("RAY_ADDRESS") or "auto"


def check_reachable(address: str, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
    """Raise :class:`RayClusterUnreachable` naming ``address`` unless a Ray cluster answers there.

    Two steps, each bounded by ``timeout``: a TCP connection to the port, then
    (for a head's ``host:port``) a request for the cluster id with Ray's own GCS
    client, so that a port that accepts connections but is no Ray head (a
    proxy, another service), or a head that refuses this process's token, fails
    here too. ``auto`` is resolved the way Ray does (``RAY_ADDRESS``, then the
    address file of the last ``ray start`` on this machine, then running GCS
    processes); ``local`` needs no check; a ``ray://`` address gets the TCP step.
    """
    kind, host, port = _parse_address(address)
    if kind == "local":
        return
    if kind == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address_or_die
        except ImportError:  # private API moved: leave the check to ray.init
            return
        try:
            found = canonicalize_bootstrap_address_or_die("auto")
        except (ConnectionError, ValueError) as exc:
            raise RayClusterUnreachable(
                f"no running Ray cluster found for ray_address 'auto' ({exc}); start one with "
                "`ray start --head`, or set ray_address / RAY_ADDRESS to host:port or ray://host:port"
            ) from None
        _, host, port = _parse_address(found)
        address = f"auto ({found})"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise RayClusterUnreachable(
            f"Ray cluster at {address!r} is unreachable: no answer on {host}:{port} within "
            f"{timeout:g} s ({exc or type(exc).__name__}); is `ray start --head` running there, "
            "and is ray_address (or RAY_ADDRESS) right?"
        ) from None
    if kind != "client":
        _probe_gcs(address, f"{host}:{port}", timeout)


def _probe_gcs(address: str, target: str, timeout: float) -> None:
    """Ask the head at ``target`` for its cluster id (Ray's GCS client, ``timeout`` bounded)."""
    try:
        from ray._raylet import InnerGcsClient

        standalone = InnerGcsClient.standalone
    except (ImportError, AttributeError):  # private API moved: leave the check to ray.init
        return
    outcome: list[BaseException | None] = []

    def probe() -> None:
        try:
            standalone(target, None, max(1, int(timeout * 1000)))
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    # In a thread: the client's own connect waits can outlast ``timeout`` (it releases the GIL).
    thread = threading.Thread(target=probe, name="ray-gcs-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    exc = outcome[0] if outcome else TimeoutError("no reply")
    if exc is None or isinstance(exc, TypeError):  # a head answered, or the private API changed
        return
    text = str(exc)
    if "Authentication" in type(exc).__name__ or "InvalidAuthToken" in text:
        raise RayClusterUnreachable(
            f"the Ray cluster at {address!r} refused this process's credentials ({text}); "
            "its head uses token authentication: set RAY_AUTH_MODE=token and the token "
            "(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) for this process"
        )
    raise RayClusterUnreachable(
        f"Ray cluster at {address!r} is unreachable: {target} accepts connections but "
        f"does not answer as a Ray head within {timeout:g} s ({text}); is ray_address "
        "(or RAY_ADDRESS) the head's GCS port (6379 by default)?"
    )


def _check_ray_client(address: str) -> None:
    try:
        from ray._private.utils import get_ray_client_dependency_error
    except ImportError:  # private API moved: ray.init will say it
        return
    missing = get_ray_client_dependency_error()
    if missing is not None:
        raise ImportError(
            f"ray_address {address!r} uses Ray Client, which needs pip install 'ray[client]' "
            f"({missing}); or run the driver on a cluster machine with ray_address host:port"
        )


def _auth_hint(address: str) -> str:
    """A hint when Ray's token authentication is the likely cause of a failed connection."""
    if os.environ.get("RAY_AUTH_MODE") or address in ("auto", "local"):
        return ""  # explicit mode, or Ray enables auth itself for auto-detected clusters
    return (
        "; if the cluster uses token authentication (Ray enables it when ~/.ray/auth_token "
        "exists on the head), set RAY_AUTH_MODE=token and the token (RAY_AUTH_TOKEN or "
        "~/.ray/auth_token) in this process's environment"
    )


_connected_address: str | None = None  # what connect() passed to ray.init in this process


def connect(address: str | None = None, timeout: float = DEFAULT_CONNECT_TIMEOUT):
    """Connect this process to a Ray cluster (reusing an existing connection) and return ``ray``.

    The address is checked first (:func:`check_reachable`), so a bad one fails
    fast, before any work starts. If this process is already connected (an
    earlier node of the same run, or a test's cluster), that connection is
    reused: a process holds one Ray connection at a time.
    """
    global _connected_address
    ray = _import_ray()
    address = resolve_address(address)
    check_reachable(address, timeout)
    if address.startswith("ray://"):
        _check_ray_client(address)
    if ray.is_initialized():
        if _connected_address not in (None, address):
            log.warning(
                "Already connected to the Ray cluster at %r; using it, not %r "
                "(a process holds one Ray connection)",
                _connected_address, address,
            )  # fmt: skip
        return ray
    kwargs: dict[str, Any] = {"address": address, "logging_level": logging.WARNING}
    if address == "local":
        kwargs["include_dashboard"] = False
    start = time.perf_counter()
    try:
        ray.init(**kwargs)
    except (ConnectionError, TimeoutError, RuntimeError) as exc:
        raise RayClusterUnreachable(
            f"could not connect to the Ray cluster at {address!r}: {exc}{_auth_hint(address)}"
        ) from exc
    _connected_address = address
    resources = ray.cluster_resources()
    log.info(
        "Connected to the Ray cluster at %r in %.1f s: %g CPUs, %g GPUs",
        address, time.perf_counter() - start, resources.get("CPU", 0), resources.get("GPU", 0),
    )  # fmt: skip
    return ray


# ---------------------------------------------------------------------------
# Self-play on actors
# ---------------------------------------------------------------------------


class _SelfPlayWorker:
    """A Ray actor that plays shards with a network it builds once per life.

    The network arrives as ``weights_ref = [ray.put(checkpoint_dict(model))]``
    with each call, wrapped in a list so that Ray passes the reference instead
    of the value: the actor fetches and rebuilds it (and its ``evaluate_fn``
    for the config's backend, e.g. the onnxruntime graph) only when it has not
    built that object yet: its first shard, or its first after a restart.
    Keeping object references out of the constructor is what lets Ray restart
    an actor safely (ray-project/ray#53727).
    """

    def __init__(self, num_threads: int | None):
        import ray
        import torch

        cuda = bool(ray.get_gpu_ids()) and torch.cuda.is_available()
        self.device = torch.device("cuda" if cuda else "cpu")  # Ray sets CUDA_VISIBLE_DEVICES
        self.num_threads = num_threads
        self._model = None
        self._weights_id = None
        self._evaluate_fns: dict = {}  # backend -> evaluate_fn of the current weights

    def _evaluate_fn(self, weights_ref: list, backend: str):
        """The ``evaluate_fn`` that :func:`~.selfplay.self_play` would build from the model."""
        import ray

        from .inference import make_evaluate_fn
        from .models import build_model

        ref = weights_ref[0]
        if self._weights_id != ref.hex():
            weights = ray.get(ref)
            model = build_model(weights["config"])
            model.load_state_dict(weights["state_dict"])
            self._model, self._weights_id = model.eval(), ref.hex()
            self._evaluate_fns = {}
        if backend not in self._evaluate_fns:
            self._evaluate_fns[backend] = make_evaluate_fn(self._model, self.device, backend)
        return self._evaluate_fns[backend]

    def ready(self, weights_ref: list, backend: str = "auto") -> dict:
        """Build the network now (warm-up); returns the actor's pid and device."""
        self._evaluate_fn(weights_ref, backend)
        return {"pid": os.getpid(), "device": str(self.device)}

    def play(
        self,
        weights_ref: list,
        config: SelfPlayConfig,
        generation: int,
        shard_index: int,
        num_shards: int,
    ):
        """One shard as a ``pyarrow.Table`` (:data:`~.selfplay.COLUMNS`)."""
        import pyarrow as pa

        table = self_play(
            config,
            self._evaluate_fn(weights_ref, config.backend),
            device=self.device,
            generation=generation,
            shard_index=shard_index,
            num_shards=num_shards,
            num_threads=self.num_threads,
        )
        return pa.Table.from_pandas(table, preserve_index=False)


def _cluster_capacity(ray, num_cpus: float, num_gpus: float, address: str) -> int:
    """How many actors with these resources the cluster holds at once."""
    total = ray.cluster_resources()
    fits = [int(total.get("CPU", 0) // num_cpus + 1e-9)]
    if num_gpus > 0:
        fits.append(int(total.get("GPU", 0) // num_gpus + 1e-9))
    capacity = min(fits)
    if capacity < 1:
        raise ValueError(
            f"no self-play actor fits on the Ray cluster at {address!r}: each needs "
            f"num_cpus={num_cpus:g}, num_gpus={num_gpus:g}; the cluster has "
            f"{total.get('CPU', 0):g} CPUs and {total.get('GPU', 0):g} GPUs"
        )
    return capacity


class RaySelfPlayPool:
    """Self-play actors holding one network, reusable across calls (the bench warms them once).

    Args:
        model: the network (built with :func:`~.models.build_model`); its
            weights are ``ray.put`` once and every actor rebuilds it.
        options: :class:`RayOptions`; ``num_shards`` also caps the actor count.
        num_threads: torch threads inside each actor (as :func:`~.selfplay.self_play`).
        num_games: the generation's slot count, to cap the actors (optional).
    """

    def __init__(
        self,
        model,
        options: RayOptions | None = None,
        *,
        num_threads: int | None = DEFAULT_NUM_THREADS,
        num_games: int | None = None,
        _worker_cls: type = _SelfPlayWorker,  # testing hook (fault injection)
    ):
        self.options = options or RayOptions()
        self.address = resolve_address(self.options.address)
        ray = connect(self.address, self.options.connect_timeout)
        self._ray = ray
        num_gpus = self.options.num_gpus
        if num_gpus == "auto":
            num_gpus = 1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        capacity = _cluster_capacity(ray, self.options.num_cpus, num_gpus, self.address)
        limits = [capacity, self.options.num_shards or capacity, num_games or capacity]
        self.num_actors = min(limits)
        self.num_gpus = float(num_gpus)
        self._weights = [ray.put(checkpoint_dict(model))]  # one copy; alive for restarts
        actor_cls = ray.remote(_worker_cls).options(
            num_cpus=self.options.num_cpus,
            num_gpus=self.num_gpus,
            max_restarts=self.options.max_retries,
            max_task_retries=self.options.max_retries,
        )
        self.actors = [actor_cls.remote(num_threads) for _ in range(self.num_actors)]
        log.info(
            "Started %d self-play actors on %r (%g CPUs, %g GPUs each; capacity %d)",
            self.num_actors, self.address, self.options.num_cpus, self.num_gpus, capacity,
        )  # fmt: skip

    def __enter__(self) -> RaySelfPlayPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the actors (the Ray connection stays for the rest of the process)."""
        for actor in self.actors:
            try:
                self._ray.kill(actor, no_restart=True)
            except Exception as exc:  # already dead, or the cluster is gone
                log.debug("could not kill actor %s: %s", actor, exc)
        self.actors = []

    def wait_ready(self, backend: str = "auto") -> list[dict]:
        """Block until every actor has built its network for ``backend``; returns pid and device."""
        return self._ray.get([a.ready.remote(self._weights, backend) for a in self.actors])

    def play(
        self,
        config: SelfPlayConfig,
        generation: int = 0,
        *,
        num_shards: int | None = None,
        progress: bool | Callable[[int, int], None] = False,
    ) -> pd.DataFrame:
        """One generation, sharded over the actors; the same table as local :func:`~.selfplay.self_play`.

        Args:
            num_shards: shards (default: ``options.num_shards`` or one per
                actor), capped at ``config.num_games``. Each actor plays one
                shard at a time; the next shard goes to the first actor free.
            progress: ``True`` shows a tqdm bar of finished shards; a callable
                gets ``(shards_done, num_shards)``.

        Raises:
            RuntimeError: naming the shard and its slots, when a shard fails
                after its retries (or raises inside the actor).
        """
        if not self.actors:
            raise RuntimeError("RaySelfPlayPool is closed")
        ray = self._ray
        num_shards = min(num_shards or self.options.num_shards or self.num_actors, config.num_games)
        todo = list(range(num_shards))
        tables: list = [None] * num_shards
        pending: dict = {}  # ObjectRef -> (shard index, actor)

        def submit(actor) -> None:
            if todo:
                shard = todo.pop(0)
                ref = actor.play.remote(self._weights, config, generation, shard, num_shards)
                pending[ref] = (shard, actor)

        bar = None
        if progress is True:
            from tqdm.auto import tqdm

            bar = tqdm(total=num_shards, unit="shard", desc=f"self-play gen {generation} (ray)")
        start = time.perf_counter()
        positions = 0
        try:
            for actor in self.actors:
                submit(actor)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                shard, actor = pending.pop(done[0])
                try:
                    table = ray.get(done[0])
                except Exception as exc:
                    slots = shard_slots(config.num_games, shard, num_shards)
                    raise RuntimeError(
                        f"self-play shard {shard} of {num_shards} (slots {slots.start}-"
                        f"{slots.stop - 1}, generation {generation}) failed on the Ray cluster at "
                        f"{self.address!r} after up to {self.options.max_retries} retries: {exc}"
                    ) from exc
                tables[shard] = table
                positions += table.num_rows
                submit(actor)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(positions=positions)
                elif callable(progress):
                    progress(num_shards - len(todo) - len(pending), num_shards)
        finally:
            if bar is not None:
                bar.close()
            _cancel(ray, pending)  # after an error or an interrupt: stop what still runs
        merged = merge_shards([t.to_pandas() for t in tables])
        log.info(
            "self-play gen %d on Ray: %d shards on %d actors, %d positions in %.1f s",
            generation, num_shards, self.num_actors, len(merged), time.perf_counter() - start,
        )  # fmt: skip
        return merged


def _cancel(ray, refs) -> None:
    for ref in refs:
        try:
            ray.cancel(ref)
        except Exception as exc:  # already finished, or the cluster is gone
            log.debug("could not cancel %s: %s", ref, exc)


def ray_self_play(
    config: SelfPlayConfig,
    model,
    *,
    generation: int = 0,
    options: RayOptions | None = None,
    num_threads: int | None = DEFAULT_NUM_THREADS,
    progress: bool | Callable[[int, int], None] = False,
) -> pd.DataFrame:
    """One generation of self-play on Ray actors (a pool for this call only).

    Same table as ``self_play(config, model=model, generation=generation)``
    for any shard count (up to float rounding in the network's batched
    kernels, see :mod:`.selfplay`).
    """
    with RaySelfPlayPool(
        model, options, num_threads=num_threads, num_games=config.num_games
    ) as pool:
        return pool.play(config, generation, progress=progress)


# ---------------------------------------------------------------------------
# Solver chunks as tasks
# ---------------------------------------------------------------------------


def ray_chunk_runner(
    address: str | None,
    max_nodes: int,
    tt_log2: int = 22,
    *,
    max_retries: int = 3,
    max_in_flight: int = 0,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    _solve_fn: Callable = solve_chunk,  # testing hook (fault injection)
) -> ChunkRunner:
    """A :class:`~.labelling.Labeller` ``run_chunks`` hook that solves chunks as Ray tasks.

    Connects now (a bad address fails here, before any work). The returned
    callable takes the chunk list ``[(position [n] uint64, mask [n] uint64)]``
    and yields ``(chunk index, solve_chunk result)`` in completion order,
    keeping at most ``max_in_flight`` tasks submitted (0: twice the cluster's
    CPUs). Each task takes one CPU; a task whose worker dies is retried up to
    ``max_retries`` times. Every Ray worker keeps its solver (and its
    transposition table) between tasks, like a local pool process.
    """
    check(_is_int(max_retries) and max_retries >= 0, "max_retries", max_retries, "an integer >= 0")
    check(
        _is_int(max_in_flight) and max_in_flight >= 0,
        "max_in_flight",
        max_in_flight,
        "an integer >= 0",
    )
    address = resolve_address(address)
    ray = connect(address, connect_timeout)
    remote = ray.remote(_solve_fn).options(num_cpus=1, max_retries=max_retries)
    window = max_in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))

    def run_chunks(chunks: Sequence[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[int, tuple]]:
        todo = iter(enumerate(chunks))
        pending: dict = {}  # ObjectRef -> chunk index

        def fill() -> None:
            while len(pending) < window:
                item = next(todo, None)
                if item is None:
                    return
                i, (p, m) = item
                pending[remote.remote(p, m, max_nodes, tt_log2)] = i

        try:
            fill()
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                i = pending.pop(done[0])
                try:
                    result = ray.get(done[0])
                except Exception as exc:
                    raise RuntimeError(
                        f"solver chunk {i} of {len(chunks)} failed on the Ray cluster at "
                        f"{address!r} after up to {max_retries} retries: {exc}"
                    ) from exc
                fill()  # keep the cluster busy while the caller merges this one
                yield i, result
        finally:
            _cancel(ray, pending)

    return run_chunks

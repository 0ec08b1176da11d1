"""Reaching a Ray cluster: addresses, options, a fast reachability check, one connection.

Addresses: ``auto`` (the cluster ``ray start`` last started on this machine),
``host:port`` (the head's GCS port, from a machine of the cluster), or
``ray://host:port`` (Ray Client, from anywhere); ``None`` reads
``RAY_ADDRESS`` and falls back to ``auto``. ``local`` starts a throw-away
single-machine cluster in this process. Before anything is submitted the
address is checked (:func:`check_reachable`: a TCP connect, then a request for
the cluster id, each with a short timeout), so a wrong or dead address, a port
that is no Ray head, or a head that wants a token this process lacks fails in
seconds with :class:`RayClusterUnreachable` naming the address, instead of
after Ray's own retries (about a minute).

Ray's public API has no way to resolve ``auto`` or to ask a head for its id
without connecting (and ``ray.init`` retries for a minute), so those two
steps use private Ray calls, all imported in :func:`_ray_internals` alone; if
a Ray release moves them, the check degrades to the TCP step and ``ray.init``.

Ray is imported lazily: importing this module needs no Ray, and without the
``ray`` extra the executor fails with an error that says how to install it.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..core.config import check, is_int

log = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds for the reachability check of an address
_RAY_CLIENT_PORT = 10001  # Ray Client's default port when ``ray://host`` has none


class RayClusterUnreachable(ConnectionError):
    """The Ray cluster address cannot be reached (raised before any work is submitted)."""


@dataclass(frozen=True)
class RayOptions:
    """Where and how the Ray executor runs. None of these change the results."""

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
            is_int(self.num_shards) and self.num_shards >= 0,
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
            is_int(self.max_retries) and self.max_retries >= 0,
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


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ---------------------------------------------------------------------------
# Connecting
# ---------------------------------------------------------------------------


def _import_ray():
    try:
        import ray  # noqa: PLC0415 (Ray: an optional extra)
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
    internals = _ray_internals()
    if kind == "auto":
        if internals is None:  # private API moved: leave the check to ray.init
            return
        try:
            found = internals.resolve_auto()
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
    if kind != "client" and internals is not None:
        _probe_gcs(internals.gcs_standalone, address, f"{host}:{port}", timeout)


class _Internals(NamedTuple):
    resolve_auto: Any  # () -> "host:port" of the cluster 'auto' means, or raises
    gcs_standalone: Any  # (target, cluster_id, timeout_ms) -> a GCS client, or raises


def _ray_internals() -> _Internals | None:
    """The private Ray calls of the fast-fail check, or None when a Ray release moved them.

    The only place this project touches Ray's private modules: the public API
    cannot resolve ``auto`` or ask a head for its id without ``ray.init``,
    whose retries take about a minute on a wrong address.
    """
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die  # noqa: PLC0415 (Ray: an optional extra)
        from ray._raylet import InnerGcsClient  # noqa: PLC0415 (Ray: an optional extra)

        return _Internals(
            lambda: canonicalize_bootstrap_address_or_die("auto"), InnerGcsClient.standalone
        )
    except (ImportError, AttributeError):
        return None


def _probe_gcs(standalone, address: str, target: str, timeout: float) -> None:
    """Ask the head at ``target`` for its cluster id (Ray's GCS client, ``timeout`` bounded)."""
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


def _client_dependency_missing() -> str | None:
    """What Ray Client lacks in this environment (its ``grpc`` module), or None."""
    return None if importlib.util.find_spec("grpc") else "No module named 'grpc'"


def _check_ray_client(address: str) -> None:
    missing = _client_dependency_missing()
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

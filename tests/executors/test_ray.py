"""Ray executor: sharded self-play and solver labelling equal the local runs, faults, bad addresses.

One real Ray cluster on 127.0.0.1 (2 CPUs) serves the whole module: a head
started with ``ray start --head --block`` in a private temp dir, stopped by
its own PID at the end, and reached by address through the production
``connect`` path. Start-up costs several seconds on the shared machine.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("ray")

from connect_zero_pipeline.core.config import values
from connect_zero_pipeline.core.labelling import (
    Labeller,
    SolvedCache,
    collect_positions,
    generate_games,
    solve_chunk,
)
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.selfplay import self_play
from connect_zero_pipeline.core.solver import SolverSpec
from connect_zero_pipeline.executors import ray_cluster
from connect_zero_pipeline.executors.ray import (
    RayClusterUnreachable,
    RayOptions,
    RaySelfPlayPool,
    _SelfPlayWorker,
    check_reachable,
    connect,
    ray_chunk_runner,
    ray_self_play,
)
from connect_zero_pipeline.executors.settings import NodeSettings
from connect_zero_pipeline.params.schema import parse_section
from connect_zero_pipeline.pipelines.alphazero import nodes as selfplay_nodes
from connect_zero_pipeline.pipelines.pons.nodes import label_pons_positions
from tests.helpers import selfplay_config

# One Ray head for the module (its fixture): with `pytest -n --dist loadfile`, every test
# here runs in one worker, never two heads on a 2-core machine.

RAY = Path(sys.executable).with_name("ray")
TINY = selfplay_config(num_games=6, sims=4, moves_per_gen=20, temp_cutoff=4, seed=11)
GENERATION = 3


def on_ray(**options) -> NodeSettings:
    """A stage's node settings on the Ray executor with these :class:`RayOptions`."""
    return NodeSettings(executor="ray", ray=RayOptions(**options))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_address():
    """A 2-CPU Ray head on 127.0.0.1 for this module; yields its GCS address."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="czr", dir="/tmp")  # short: Ray's socket paths
    port = _free_port()
    cmd = [
        str(RAY), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--dashboard-agent-listen-port={_free_port()}", f"--metrics-export-port={_free_port()}",
        "--num-cpus=2", "--num-gpus=0", "--include-dashboard=false",
        "--disable-usage-stats", f"--temp-dir={temp_dir}",
    ]  # fmt: skip
    # No token authentication: `ray start` would turn it on if ~/.ray/auth_token exists,
    # and a driver reads RAY_AUTH_MODE once, when ray is imported (at collection here).
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    address = f"127.0.0.1:{port}"
    output: list[str] = []
    try:
        for line in head.stdout:  # `ray start --block` says when its runtime is up
            output.append(line)
            if "will now block" in line:
                break
        else:
            raise RuntimeError(f"the test Ray head did not start: {''.join(output)}")
        # The rest of its output is read on, so that a full pipe never stalls the head.
        threading.Thread(target=output.extend, args=(head.stdout,), daemon=True).start()
        connect(address, timeout=30.0)  # the production path: check, then ray.init
        yield address
    finally:
        ray.shutdown()
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops its own processes
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(5)
    return build_model("tiny").eval()


@pytest.fixture(scope="module")
def local_table(tiny_model):
    return self_play(TINY, model=tiny_model, generation=GENERATION)


def assert_same_games(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Every column equal, except ``root_value`` within 1e-5 (batched float kernels, see selfplay)."""
    assert len(expected) > 0
    pd.testing.assert_frame_equal(
        got.drop(columns="root_value"), expected.drop(columns="root_value"), check_exact=True
    )
    assert got["root_value"].dtype == expected["root_value"].dtype
    np.testing.assert_allclose(got["root_value"], expected["root_value"], rtol=0, atol=1e-5)
    assert not got.duplicated(["game", "ply"]).any()


# ---------------------------------------------------------------------------
# Self-play
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_sharded_selfplay_on_ray_equals_local(ray_address, tiny_model, local_table):
    seen = []
    with RaySelfPlayPool(tiny_model, on_ray(address=ray_address), num_games=TINY.num_games) as pool:
        assert pool.num_actors == 2  # one per CPU of the cluster
        assert {r["device"] for r in pool.wait_ready()} == {"cpu"}
        for num_shards in (1, 2, 4, TINY.num_games):
            got = pool.play(
                TINY, GENERATION, num_shards=num_shards, progress=lambda d, n: seen.append((d, n))
            ).table
            assert_same_games(got, local_table)
            assert seen[-1] == (num_shards, num_shards)  # progress counts finished shards
        # Another seed is another table: the equality above is not vacuous.
        other = pool.play(dataclasses.replace(TINY, seed=12), GENERATION).table
        assert not other[["position", "action"]].equals(local_table[["position", "action"]])
        # The recipe's precision reaches the actors' network (built again for it).
        bf16 = dataclasses.replace(TINY, precision="bfloat16")
        expected = self_play(bf16, model=tiny_model, generation=GENERATION)
        assert not expected[["position", "action"]].equals(local_table[["position", "action"]])
        assert_same_games(pool.play(bf16, GENERATION, num_shards=2).table, expected)


def _crash_once_worker(marker: Path):
    """A worker class whose process dies (``os._exit``) halfway through shard 1, once."""

    class CrashOnceWorker(_SelfPlayWorker):
        def play(self, weights_ref, config, generation, shard_index, num_shards):
            import pyarrow as pa

            def progress(step, total):
                if shard_index == 1 and step == total // 2 and not marker.exists():
                    marker.write_text(str(os.getpid()))
                    os._exit(1)  # as if the machine or the process were killed

            table = self_play(
                config,
                self._evaluate_fn(weights_ref),
                generation=generation,
                shard_index=shard_index,
                num_shards=num_shards,
                progress=progress,
            )
            return pa.Table.from_pandas(table, preserve_index=False), 0.0

    return CrashOnceWorker


@pytest.mark.slow
def test_an_actor_killed_mid_shard_is_restarted_without_lost_or_doubled_rows(
    ray_address, tiny_model, local_table, tmp_path
):
    marker = tmp_path / "crashed"
    options = on_ray(address=ray_address, num_shards=2, max_retries=2)
    with RaySelfPlayPool(tiny_model, options, _worker_cls=_crash_once_worker(marker)) as pool:
        got = pool.play(TINY, GENERATION).table
        pids = {r["pid"] for r in pool.wait_ready()}
    assert marker.exists(), "the fault was not injected"
    assert int(marker.read_text()) not in pids  # the dead actor was replaced by a new process
    assert_same_games(got, local_table)


@pytest.mark.slow
def test_a_shard_that_keeps_failing_names_the_shard(ray_address, tiny_model, tmp_path):
    options = on_ray(address=ray_address, num_shards=2, max_retries=0)
    with (
        RaySelfPlayPool(
            tiny_model, options, _worker_cls=_crash_once_worker(tmp_path / "m")
        ) as pool,
        pytest.raises(RuntimeError, match=r"shard 1 of 2 \(slots 3-5"),
    ):
        pool.play(TINY, GENERATION)


@pytest.mark.slow
def test_every_node_setting_reaches_the_actors_search(ray_address, tiny_model):
    # compile and backend together are refused by self_play itself, inside the actor: the
    # error comes back only if both reached the shard's self_play call.
    node = dataclasses.replace(on_ray(address=ray_address, num_shards=1, max_retries=0),
                               backend="onnxruntime", compile="on")  # fmt: skip
    with RaySelfPlayPool(tiny_model, node, num_games=TINY.num_games) as pool:
        with pytest.raises(RuntimeError, match=r"compile 'on' runs the network with torch, but "
                                               r"backend is 'onnxruntime'"):  # fmt: skip
            pool.play(TINY, GENERATION)
        # The recipe's precision with them: the actor's compiled search refuses bfloat16.
        with pytest.raises(RuntimeError, match=r"compile 'on' runs the network in float32, but "
                                               r"precision is 'bfloat16'"):  # fmt: skip
            pool.play(dataclasses.replace(TINY, precision="bfloat16"), GENERATION)
    # device: an actor with no GPU refuses a node that asks for CUDA, by name.
    node = dataclasses.replace(on_ray(address=ray_address, max_retries=0), device="cuda")
    no_gpu = r"node.device is 'cuda', but this Ray actor has no GPU"
    with pytest.raises(Exception, match=no_gpu), RaySelfPlayPool(tiny_model, node) as pool:
        pool.wait_ready()


def _latest(project: Path, relpath: str) -> Path:
    folder = project / relpath
    return max(folder.iterdir()) / Path(relpath).name  # versions are sortable timestamps


def test_kedro_run_of_a_generation_on_ray_gives_the_local_table(ray_address, kedro_project):
    from connect_zero_pipeline.core.checkpoint import load_model
    from tests.helpers import run_kedro

    cfg = selfplay_config(num_games=9, sims=4, moves_per_gen=16, seed=2)
    params = {f"selfplay.{k}": v for k, v in values(cfg).items()}
    params.update({"selfplay.node.executor": "ray", "selfplay.node.ray.address": ray_address})
    params["selfplay.node.ray.num_shards"] = 3
    run_kedro(kedro_project, "selfplay", params, namespaces=["gen_000", "gen_001"])
    model = load_model(_latest(kedro_project, "data/06_models/gen_000/model.pt"))
    games = pd.read_parquet(
        _latest(kedro_project, "data/05_model_input/selfplay/gen_001/games.parquet")
    )
    assert_same_games(games, self_play(cfg, model=model, generation=1))


# ---------------------------------------------------------------------------
# Labelling
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def late_positions():
    """~40 distinct late-game positions (cheap to solve exactly)."""
    with Labeller(max_nodes=0) as lab:
        games = generate_games(14, lab, epsilon=0.5, opening_plies=(24, 28), seed=4)
    positions = collect_positions(games, min_ply=24)
    assert len(positions) >= 30
    return positions


def _cache_keys(directory: Path) -> np.ndarray:
    parts = sorted(directory.glob("part-*.parquet"))
    return pd.concat([pd.read_parquet(p) for p in parts])["key"].to_numpy(np.uint64)


def test_labelling_on_ray_equals_local_and_the_cache_has_no_duplicates(
    ray_address, late_positions, tmp_path
):
    pos = late_positions["position"].to_numpy(np.uint64)
    mask = late_positions["mask"].to_numpy(np.uint64)
    # Ask for some positions twice: each is solved once and every copy gets its label.
    pos = np.concatenate([pos, pos[:10]])
    mask = np.concatenate([mask, mask[:10]])
    with Labeller(max_nodes=0, cache=SolvedCache(tmp_path / "local")) as lab:
        expected, ok_local, _ = lab.label(pos, mask)
    runner = ray_chunk_runner(ray_address)
    cache = SolvedCache(tmp_path / "ray")
    with Labeller(
        max_nodes=0, chunk_size=8, cache=cache, solver=SolverSpec(16), run_chunks=runner
    ) as lab:
        got, ok, stats = lab.label(pos, mask)
    assert ok.all() and ok_local.all()
    assert np.array_equal(got, expected)
    distinct = len(late_positions)
    assert stats.solved == distinct and stats.cached == 0
    keys = _cache_keys(tmp_path / "ray")
    assert len(keys) == distinct == len(np.unique(keys))  # nothing lost, nothing twice
    # A rerun on the same cache solves nothing.
    with Labeller(max_nodes=0, cache=SolvedCache(tmp_path / "ray"), run_chunks=runner) as lab:
        again, _, stats2 = lab.label(pos, mask)
    assert stats2.cached == len(pos) and stats2.solved == 0
    assert np.array_equal(again, expected)


def test_a_solver_task_whose_worker_dies_is_retried(ray_address, late_positions, tmp_path):
    marker = tmp_path / "crashed"

    def crash_once(p, m, max_nodes, spec):
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)
        return solve_chunk(p, m, max_nodes, spec)

    pos = late_positions["position"].to_numpy(np.uint64)[:24]
    mask = late_positions["mask"].to_numpy(np.uint64)[:24]
    with Labeller(max_nodes=0) as lab:
        expected, _, _ = lab.label(pos, mask)
    runner = ray_chunk_runner(ray_address, max_retries=2, _solve_fn=crash_once)
    with Labeller(max_nodes=0, chunk_size=6, solver=SolverSpec(16), run_chunks=runner) as lab:
        got, ok, stats = lab.label(pos, mask)
    assert marker.exists(), "the fault was not injected"
    assert ok.all() and stats.solved == 24 and np.array_equal(got, expected)
    assert len(lab.cache) == 24


def test_pons_labelling_node_with_executor_ray(ray_address, late_positions, tmp_path):
    positions = late_positions.head(30)
    base = {"max_nodes": 0, "chunk_size": 8, "tt_log2": 16}
    local_node = {"workers": 1}
    local, _ = label_pons_positions(
        positions,
        {**base, "cache_dir": str(tmp_path / "a"), "node": local_node},
        str(tmp_path / "a"),
    )
    ray_node = {"executor": "ray", "ray": {"address": ray_address}}
    got, metrics = label_pons_positions(
        positions, {**base, "cache_dir": str(tmp_path / "b"), "node": ray_node}, str(tmp_path / "b")
    )
    pd.testing.assert_frame_equal(got, local)
    assert metrics["label.solved"]["value"] == 30


# ---------------------------------------------------------------------------
# Addresses and settings (no cluster needed)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1"])
def test_an_unreachable_address_fails_fast_naming_it(address, tiny_model):
    start = time.perf_counter()
    with pytest.raises(RayClusterUnreachable, match=address):
        ray_self_play(TINY, tiny_model, node=on_ray(address=address))
    with pytest.raises(RayClusterUnreachable, match=address):
        ray_chunk_runner(address)
    params = {"node": {"executor": "ray", "ray": {"address": address}, "device": "cpu"}}
    with pytest.raises(RayClusterUnreachable, match=address):
        selfplay_nodes.generate_games(tiny_model, params, 1)
    assert time.perf_counter() - start < 5  # Ray's own connect retries take a minute


@pytest.fixture
def silent_server():
    """A TCP port on 127.0.0.1 that accepts connections and never answers (no Ray head)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []

    def serve():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for conn in accepted:
        conn.close()


def test_a_port_that_is_no_ray_head_fails_quickly(silent_server):
    # A local port that accepts and stays silent; and a TEST-NET-2 address (no host:
    # a timeout on a plain network, a foreign answer behind a transparent proxy).
    for address in (silent_server, "198.51.100.1:6379"):
        start = time.perf_counter()
        with pytest.raises(RayClusterUnreachable, match=address):
            check_reachable(address, timeout=0.5)
        assert time.perf_counter() - start < 2, address


def test_a_ray_client_address_without_the_client_extra_says_what_to_install(
    silent_server, monkeypatch
):
    # The project's extra installs the client; pretend it is missing.
    monkeypatch.setattr(ray_cluster, "_client_dependency_missing", lambda: "No module named 'grpc'")
    with pytest.raises(ImportError, match=r"ray\[client\]"):
        connect(f"ray://{silent_server}", timeout=0.5)


def test_auto_without_a_cluster_says_so(monkeypatch):
    import ray._private.services as services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "find_gcs_addresses", lambda: frozenset())
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
    with pytest.raises(RayClusterUnreachable, match="'auto'.*ray start --head"):
        check_reachable("auto")


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"executor": "dask"}, "selfplay.node.executor"),
        ({"executor": "ray", "ray": {"num_shards": -1}}, "selfplay.node.ray.num_shards"),
        ({"executor": "ray", "ray": {"num_shards": 1.5}}, "selfplay.node.ray.num_shards"),
        ({"executor": "ray", "ray": {"num_cpus": 0}}, "selfplay.node.ray.num_cpus"),
        ({"executor": "ray", "ray": {"num_gpus": "all"}}, "selfplay.node.ray.num_gpus"),
        ({"executor": "ray", "ray": {"max_retries": -1}}, "selfplay.node.ray.max_retries"),
        ({"executor": "ray", "ray": {"address": "nohost"}}, "nohost"),
        ({"executor": "ray", "ray": {"address": "h:99999"}}, "h:99999"),
    ],
)
def test_bad_settings_name_the_key(settings, key, tiny_model):
    with pytest.raises(ValueError, match=key):
        parse_section("selfplay", {"node": settings})
    with pytest.raises(ValueError, match=key):  # and the node fails before any work
        selfplay_nodes.generate_games(tiny_model, {"node": {**settings, "device": "cpu"}}, 1)


def test_local_executor_needs_no_options_and_the_module_needs_no_ray():
    node = parse_section("selfplay", {"node": {"executor": "local", "ray": {"num_shards": 8}}}).node
    assert node.executor == "local"
    code = (
        "import sys, connect_zero_pipeline.executors.ray, "
        "connect_zero_pipeline.pipelines.alphazero.nodes\n"
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_gpus_the_cluster_lacks_are_a_clear_error(ray_address, tiny_model):
    with pytest.raises(ValueError, match=r"num_gpus=1.*0 GPUs"):
        RaySelfPlayPool(tiny_model, on_ray(address=ray_address, num_gpus=1))

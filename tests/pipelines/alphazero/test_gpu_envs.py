"""A GPU env runs end to end: `kedro run --env gpu` on the CPU at tiny sizes.

The project's machines have no GPU, so the GPU recipes cannot be timed here;
this proves that the env merges over conf/base, validates, builds its DAG and
runs every node (self-play, training, evaluation, export), with only the
device and the sizes overridden on the command line. Every env (``gpu_strong``
too) is merged and validated in ``tests/test_conf.py``; with the sizes
overridden, ``gpu_strong``'s run would be this one's.
"""

from __future__ import annotations

import pytest
import torch

from tests.conftest import cli_params, kedro_cli, latest, mlflow_client, no_public_sets

CPU_TINY = {
    "alphazero.num_generations": 1,
    "selfplay.num_games": 8,
    "selfplay.mcts.sims": 2,
    "selfplay.moves_per_gen": 4,  # one game per slot (the games in progress finish)
    "selfplay.node.workers": 1,
    "selfplay.node.device": "cpu",
    "train.node.device": "cpu",
    "train.node.num_threads": 1,
    "train.batch_size": 32,
    "train.samples_per_position": 1.0,
    "evaluate.node.device": "cpu",
    "evaluate.mcts.sims": 2,
    "evaluate.previous.num_games": 2,
    "evaluate.previous.mcts.sims": 2,
}


@pytest.mark.slow
def test_the_gpu_env_runs_the_whole_dag_on_the_cpu(pons_project):
    no_public_sets(pons_project, "gpu")  # an env run reads no conf/local
    res = kedro_cli(pons_project, "run", "--env", "gpu", "--params", cli_params(CPU_TINY))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # The env's own keys took effect (its `small` network) ...
    model = torch.load(latest(pons_project, "data/06_models/gen_001/model.pt"), weights_only=True)
    assert (model["config"]["blocks"], model["config"]["channels"]) == (5, 64)
    for rel in ("data/06_models/latest_model.pt", "data/06_models/onnx_model.onnx"):
        assert latest(pons_project, rel).stat().st_size > 10_000, rel
    # ... and the recipe keys it does not name came from conf/base, not code defaults.
    client = mlflow_client(pons_project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    runs = client.search_runs([exp.experiment_id])
    child = next(r for r in runs if r.info.run_name == "gen_001")
    assert child.data.params["selfplay.random_opening_plies"] == "4"
    assert child.data.params["train.root_value_weight"] == "0.5"
    assert child.data.params["selfplay.num_games"] == "8"
    assert {r.info.status for r in runs} == {"FINISHED"}

"""Schedules: a section's keys changed from a generation on, checked with the section, and the
DAG's replay window following ``train.schedule``."""

from __future__ import annotations

import pytest

from connect_zero_pipeline.common.config_loader import load_parameters
from connect_zero_pipeline.params.schedule import scheduled_params
from connect_zero_pipeline.params.schema import parse_run_params, parse_section
from tests.helpers import REPO

RISING = {"mcts": {"sims": 16}, "schedule": {13: {"mcts": {"sims": 32}},
                                             "25": {"mcts": {"sims": 64}, "num_games": 256}}}  # fmt: skip


def test_phases_apply_in_order_from_their_generation():
    selfplay = parse_section("selfplay", RISING)
    assert list(selfplay.schedule) == [13, 25]  # a generation given as text is its number
    assert [selfplay.at(k).mcts.sims for k in (1, 12, 13, 24, 25, 40)] == [16, 16, 32, 32, 64, 64]
    assert selfplay.at(13).num_games == 512 and selfplay.at(25).num_games == 256
    assert selfplay.at(25).mcts.search == "gumbel"  # what a phase does not name stays
    assert selfplay.at(25).schedule == {} and selfplay.at(1).mcts == parse_section(
        "selfplay", {"mcts": {"sims": 16}}).mcts  # fmt: skip
    # What a generation's MLflow run records: the same values, from the mapping.
    for k in (1, 13, 30):
        assert parse_section("selfplay", scheduled_params(RISING, k, "selfplay")) == selfplay.at(k)
    assert "schedule" not in scheduled_params(RISING, 30, "selfplay")


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({13: {"mcts": {"sims": 0}}}, "selfplay.schedule.13.mcts.sims must be"),
        ({13: {"simz": 3}}, "unknown parameter 'selfplay.schedule.13.simz'"),
        ({13: {"num_game": 3}}, "Did you mean 'selfplay.schedule.13.num_games'?"),
        ({"x": {"num_games": 3}}, "selfplay.schedule.x must be keyed by a generation"),
        ({0: {"num_games": 3}}, "selfplay.schedule.0 must be keyed by a generation"),
        ({13: 32}, "selfplay.schedule.13 must be a mapping of selfplay's keys"),
        (
            {13: {"node": {"workers": 1}}},
            "selfplay.schedule.13.node: a schedule changes the recipe",
        ),
        ([16, 32], "selfplay.schedule must be a mapping, got [16, 32]"),
    ],
)
def test_a_bad_phase_is_named_before_any_work(schedule, message):
    with pytest.raises(ValueError, match="invalid parameter") as caught:
        parse_run_params({"selfplay": {"schedule": schedule}})
    assert message in str(caught.value)
    assert str(caught.value).count("invalid parameter") == 1


def test_a_train_schedule_widens_the_window_the_dag_wires():
    from connect_zero_pipeline.pipelines.alphazero.pipeline import create_pipeline
    from connect_zero_pipeline.pipelines.structure import reading

    params = load_parameters(REPO / "conf", "tiny")
    params["alphazero"]["num_generations"] = 6
    params["train"] = {**params["train"], "buffer_gens": 2, "schedule": {4: {"buffer_gens": 3}}}
    with reading(parse_run_params(params)):
        pipeline = create_pipeline()
    windows = {}
    for node in pipeline.nodes:
        if node.name.endswith(".train"):
            gen = int(node.namespace.split("_")[1])
            windows[gen] = sorted(i.split(".")[0] for i in node.inputs if i.endswith(".games"))
    assert windows[3] == ["gen_002", "gen_003"]
    assert windows[4] == ["gen_002", "gen_003", "gen_004"]  # from generation 4: three
    assert windows[6] == ["gen_004", "gen_005", "gen_006"]

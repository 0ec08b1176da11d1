"""The train node: a replay window without finished games fails with a clear error."""

from __future__ import annotations

import pandas as pd
import pytest

from connect_zero_pipeline.core.inference import torch_evaluate_fn
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.selfplay import self_play
from connect_zero_pipeline.pipelines.alphazero.nodes import train_generation
from tests.helpers import selfplay_config


def test_a_window_without_finished_games_names_the_setting():
    model = build_model({"arch": "mlp", "hidden": [8]})
    games = self_play(
        selfplay_config(num_games=2, sims=2, moves_per_gen=3, finish_games=False),
        torch_evaluate_fn(model),
    )
    assert games.empty  # 3 plies finish no game, and the games in progress are dropped
    assert isinstance(games, pd.DataFrame)
    with pytest.raises(ValueError, match="no positions .*selfplay.finish_games=true"):
        train_generation(model, {"node": {"device": "cpu"}}, games, generation=1, num_generations=2)


def test_a_table_missing_a_column_is_a_schema_error_naming_the_dataset():
    model = build_model({"arch": "mlp", "hidden": [8]})
    cfg = selfplay_config(num_games=4, sims=2, moves_per_gen=42)
    good = self_play(cfg, torch_evaluate_fn(model), generation=1)
    bad = self_play(cfg, torch_evaluate_fn(model), generation=2).drop(columns=["pi_3"])
    with pytest.raises(
        ValueError, match=r"self-play table gen_002\.games lacks column\(s\) \['pi_3'\]"
    ):
        train_generation(
            model, {"node": {"device": "cpu"}}, good, bad, generation=2, num_generations=2
        )
    nulls = good.copy()
    nulls.loc[0, "z"] = float("nan")
    with pytest.raises(ValueError, match=r"gen_001\.games has null values in column\(s\) \['z'\]"):
        train_generation(
            model, {"node": {"device": "cpu"}}, nulls, bad, generation=2, num_generations=2
        )


def test_generation_0_s_games_join_a_window_only_while_it_reaches_them():
    """A start run's window (gen_000.games, generations -2..0) fills the first windows:
    generation k trains on the rows of generations k - buffer_gens + 1 .. k only."""
    model = build_model({"arch": "mlp", "hidden": [8]})
    cfg = selfplay_config(num_games=4, sims=2, moves_per_gen=42)
    source = pd.concat(
        [self_play(cfg, torch_evaluate_fn(model), generation=g) for g in (-2, -1, 0)],
        ignore_index=True,
    )
    own = [self_play(cfg, torch_evaluate_fn(model), generation=g) for g in (1, 2)]
    params = {"buffer_gens": 3, "batch_size": 16, "node": {"device": "cpu"}}
    cases = [(1, [source, own[0]], 3), (2, [source, *own], 3)]  # windows -1..1 and 0..2
    empty = source.iloc[0:0]
    cases.append((1, [empty, own[0]], 1))  # a run started from scratch: gen_000 has no games
    for generation, window, expected in cases:
        _, metrics = train_generation(model, params, *window, generation=generation,
                                      num_generations=2)  # fmt: skip
        assert metrics["window_generations"] == expected, (generation, metrics)
    # The window's samples are the kept rows: generation 2 keeps only the source's last one.
    params["merge_duplicates"] = False
    _, two = train_generation(model, params, source, *own, generation=2, num_generations=2)
    kept = (source["generation"] == 0).sum() + len(own[0]) + len(own[1])
    assert two["num_samples"] == 2 * kept  # mirrored

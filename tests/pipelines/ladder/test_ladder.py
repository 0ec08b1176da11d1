"""The ladder on a tiny project: Elo in MLflow and in versioned tables, cached games, bad input."""

from __future__ import annotations

import pandas as pd
import pytest

from connect_zero_pipeline.core.labelling import SolvedCache
from connect_zero_pipeline.run.manifest import known_runs
from tests.helpers import copy_project, mlflow_client, run_kedro, versions

LADDER = {
    "ladder.every": 1,
    "ladder.num_openings": 2,
    "ladder.mcts.sims": 2,
    "ladder.num_bootstrap": 20,
    "ladder.anchors": ["random", "random_punisher", "solver:0.5"],
    "ladder.solver_max_nodes": 20000,
    "ladder.node.device": "cpu",
}


def _latest_table(project, relpath: str) -> pd.DataFrame:
    (version,) = versions(project, relpath)[-1:]
    return pd.read_parquet(project / relpath / version / relpath.rsplit("/", 1)[-1])


def _cache_rows(project) -> int:
    parts = (project / "data/02_intermediate/ladder_cache").glob("part-*.parquet")
    return sum(len(pd.read_parquet(p)) for p in parts)


@pytest.mark.slow
def test_a_ladder_rates_generations_and_anchors_and_reuses_games(
    finished_run, tmp_path, monkeypatch, capsys
):
    """A ladder of the suite's finished run's generations (in a copy of its project)."""
    pons_project = copy_project(finished_run[0], tmp_path / "project")
    monkeypatch.chdir(pons_project)
    (run_id,) = known_runs(pons_project)
    run_kedro(pons_project, "ladder", LADDER)
    summary = capsys.readouterr().out

    ratings = _latest_table(pons_project, "data/08_reporting/ladder/ratings.parquet")
    assert set(ratings["label"]) == {"gen_001", "gen_002", "random", "random_punisher",
                                     "solver:0.5"}  # fmt: skip
    assert set(ratings.loc[ratings.kind == "generation", "run_id"]) == {run_id}
    assert ratings.set_index("label").loc["random_punisher", "elo"] == 0.0  # the anchor
    assert (ratings["elo_low"] <= ratings["elo"] + 1e-6).all()
    assert (ratings["elo"] <= ratings["elo_high"] + 1e-6).all()
    # The summary prints the ratings table; a player of no run has an empty run cell.
    assert "### Ladder ratings (Elo)" in summary and "| player | run | Elo |" in summary
    assert "| random_punisher |  | +0 | [+0, +0] |" in summary and "nan" not in summary
    assert f"| gen_002 | {run_id} |" in summary
    matches = _latest_table(pons_project, "data/08_reporting/ladder/matches.parquet")
    assert len(matches) == 10 * 2 * 2  # 10 pairs x 2 openings x 2 colours
    assert set(matches["result"]) <= {-1, 0, 1}
    assert matches.groupby(["player_a", "player_b"])["a_first"].sum().eq(2).all()
    assert "solver:0.5,nodes=20000,book" in {*matches["player_a"], *matches["player_b"]}
    assert len(versions(pons_project, "data/08_reporting/ladder/elo.png")) == 1

    # MLflow: elo on each rated generation's child run (step = generation), the table on
    # the ladder's run.
    client = mlflow_client(pons_project)
    exp = client.get_experiment_by_name("connect_zero_pipeline").experiment_id
    runs = client.search_runs([exp])
    children = {r.info.run_name: r for r in runs if "mlflow.parentRunId" in r.data.tags}
    for gen in ("gen_001", "gen_002"):
        (metric,) = client.get_metric_history(children[gen].info.run_id, "elo")
        assert metric.step == int(gen[-3:])
        assert metric.value == pytest.approx(ratings.set_index("label").loc[gen, "elo"])
    (ladder_run,) = [
        r for r in runs if r.info.run_name.split()[-2:-1] == ["ladder"]
    ]  # <what differs: its --params> ladder <time>
    artifacts = {a.path for a in client.list_artifacts(ladder_run.info.run_id, "ladder")}
    assert artifacts == {"ladder/ratings.csv", "ladder/elo.png"}

    # One more anchor: only its 5 new pairs are played; the 10 earlier pairs are reused.
    before = _cache_rows(pons_project)
    more = {**LADDER, "ladder.anchors": [*LADDER["ladder.anchors"], "solver:0.25"]}
    run_kedro(pons_project, "ladder", more)
    assert _cache_rows(pons_project) == before + 5 * 4
    again = _latest_table(pons_project, "data/08_reporting/ladder/matches.parquet")
    new = "solver:0.25,nodes=20000,book"  # a budgeted anchor names its budget and the book
    old_pairs = again[(again.player_b != new) & (again.player_a != new)]
    pd.testing.assert_frame_equal(old_pairs.reset_index(drop=True), matches)

    # The registered champion joins; with move_champion the alias follows the ladder.
    ladder3 = {**more, "ladder.registry": ["champion"], "ladder.move_champion": True}
    run_kedro(pons_project, "ladder", ladder3)
    assert _cache_rows(pons_project) == before + 5 * 4 + 6 * 4
    rated = _latest_table(pons_project, "data/08_reporting/ladder/ratings.parquet")
    (champion,) = rated[rated.kind == "registry"].itertuples()
    assert champion.label == "connect-zero v1 (champion)" and champion.run_id == run_id
    version = client.get_model_version("connect-zero", "1")
    assert float(version.tags["ladder.elo"]) == pytest.approx(champion.elo, abs=0.05)
    assert client.get_registered_model("connect-zero").tags["champion_by"] == "ladder.elo"

    # Exact solver anchors (solver_max_nodes 0, conf/ladder_strong) analyse through the
    # project's solver cache; from 12-ply openings the analyses are quick.
    solver_cache = pons_project / "data/02_intermediate/solver_cache"
    cached = len(SolvedCache(solver_cache))
    exact = {
        **LADDER,
        "ladder.runs": [],
        "ladder.anchors": ["random_punisher", "solver:0"],
        "ladder.solver_max_nodes": 0,
        "ladder.opening_plies": 12,
        "ladder.node.workers": 1,
    }  # fmt: skip (in this process: no pool to start)
    run_kedro(pons_project, "ladder", exact)
    games = _latest_table(pons_project, "data/08_reporting/ladder/matches.parquet")
    assert set(games.player_a) | set(games.player_b) == {"random_punisher", "solver:0,nodes=0"}
    assert len(SolvedCache(solver_cache)) > cached  # every analysis is kept for later ladders


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"ladder.runs": ["2020-01-01T00.00.00.000Z"]},
         r"ladder.runs='2020-01-01T00.00.00.000Z': no such run in this project"),
        ({"ladder.runs": ["latest"]}, r"'latest' names no run: this project has no finished"),
        ({"ladder.runs": [], "ladder.registry": ["champion"]},
         r"ladder.registry: connect-zero has no version or alias 'champion'"),
        ({"ladder.runs": [], "ladder.reinforce": ["rf_009"]}, r"no trained chunk 'rf_009'"),
    ],
)  # fmt: skip
def test_a_bad_selection_fails_before_any_game(pons_project, params, message):
    with pytest.raises(Exception, match=message):
        run_kedro(pons_project, "ladder", {**LADDER, **params})
    assert not (pons_project / "data/08_reporting/ladder/matches.parquet").exists()
    assert _cache_rows(pons_project) == 0


def test_bad_ladder_parameters_are_named(kedro_project):
    from connect_zero_pipeline.params.ladder import LadderConfig

    with pytest.raises(ValueError, match=r"anchors must be 'random', 'random_punisher' or "
                       r"'solver:<epsilon in \[0, 1\]>', got 'solver:2'"):  # fmt: skip
        LadderConfig(anchors=["random", "solver:2"], anchor="random")
    with pytest.raises(ValueError, match="anchor must be one of the anchors"):
        LadderConfig(anchor="gen_003")


def test_reinforce_chunks_play_by_their_latest_version(kedro_project):
    from connect_zero_pipeline.core.checkpoint import save_model
    from connect_zero_pipeline.core.models import build_model

    folder = kedro_project / "data/06_models/reinforce/rf_002/model.pt"
    for version in ("2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z"):
        (folder / version).mkdir(parents=True)
        save_model(build_model("mlp"), folder / version / "model.pt")
    searchless = {k: v for k, v in LADDER.items() if not k.startswith("ladder.mcts")}
    params = {**searchless, "ladder.runs": [], "ladder.reinforce": ["rf_002"], "ladder.mcts": None,
              "ladder.anchors": ["random", "random_punisher"]}  # fmt: skip
    run_kedro(kedro_project, "ladder", params)
    ratings = _latest_table(kedro_project, "data/08_reporting/ladder/ratings.parquet")
    assert set(ratings["id"]) == {
        "rf_002@2026-01-02T00.00.00.000Z|policy",  # the latest version, its policy alone
        "random",
        "random_punisher",
    }

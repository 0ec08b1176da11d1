"""Configuration: one default per key, envs that change only what they name, every config builds."""

from __future__ import annotations

import pytest
import yaml

from connect_zero_pipeline.common.config_loader import load_parameters
from connect_zero_pipeline.core.config import defaults
from connect_zero_pipeline.params.schema import SCHEMA, parse_run_params, parse_section
from tests.helpers import REPO

CONF = REPO / "conf"
ENVS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("base", "local"))


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in d.items():
        if isinstance(value, dict) and not (prefix + key).endswith("arch"):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _env_file_params(env: str) -> dict:
    merged: dict = {}
    for path in sorted((CONF / env).glob("parameters*.yml")):
        merged.update(yaml.safe_load(path.read_text()) or {})
    return merged


def test_every_env_is_tested():
    assert {"bfloat16", "gpu", "gpu_strong", "reinforce_strong", "ladder_strong"} <= set(ENVS)


def _drift(conf) -> tuple[list[str], int]:
    """Keys whose conf/base value differs from their dataclass default, and how many were compared."""
    base = load_parameters(conf)
    problems, compared = [], 0
    for section, cls in SCHEMA.items():
        expected = defaults(cls)  # nested dataclasses as dotted keys: mcts.sims
        written = _flatten(base[section])
        for key, value in written.items():
            if key not in expected:
                problems.append(f"{section}.{key}: in conf/base, in no config")
            elif value != expected[key]:
                problems.append(f"{section}.{key}: conf/base {value!r}, default {expected[key]!r}")
            compared += 1
    return problems, compared


def test_base_parameters_are_the_dataclass_defaults():
    """One place for each default: conf/base repeats the dataclass defaults, never others."""
    problems, compared = _drift(CONF)
    assert problems == []
    assert compared > 80  # every section's keys were compared


def test_a_default_defined_twice_with_two_values_fails(tmp_path):
    """The check above catches a drift between conf/base and a dataclass."""
    import shutil

    shutil.copytree(CONF / "base", tmp_path / "base")
    (tmp_path / "local").mkdir()
    path = tmp_path / "base" / "parameters_selfplay.yml"
    text = path.read_text()
    assert "random_opening_plies: 4" in text
    path.write_text(text.replace("random_opening_plies: 4", "random_opening_plies: 0"))
    problems, _ = _drift(tmp_path)
    assert problems == ["selfplay.random_opening_plies: conf/base 0, default 4"]


def test_base_builds_every_stage_config():
    built = parse_run_params(load_parameters(CONF))
    for section, cls in SCHEMA.items():
        assert isinstance(getattr(built, section), cls), section


@pytest.mark.parametrize("env", ENVS)
def test_an_env_changes_exactly_the_keys_its_file_names(env):
    base = _flatten(load_parameters(CONF))
    merged = _flatten(load_parameters(CONF, env))
    named = _flatten(_env_file_params(env))
    assert named, f"conf/{env} names no parameter"
    changed = {k for k in set(base) | set(merged) if base.get(k) != merged.get(k)}
    assert changed == set(named), f"conf/{env}: changed {sorted(changed)}, names {sorted(named)}"
    for key, value in named.items():
        assert merged[key] == value, key
    assert set(merged) == set(base)  # nothing of the recipe is lost
    parse_run_params(load_parameters(CONF, env))  # and every stage config builds from it


def test_the_gpu_env_keeps_the_recipe_it_does_not_name():
    merged = load_parameters(CONF, "gpu")
    assert merged["selfplay"]["random_opening_plies"] == 4
    assert merged["train"]["root_value_weight"] == 0.5
    assert merged["evaluate"]["num_games"] == 200
    assert merged["selfplay"]["node"]["device"] == "cuda"


@pytest.mark.parametrize(
    ("section", "params", "message"),
    [
        ("selfplay", {"mcts": {"sims": 0}}, r"selfplay\.mcts\.sims must be an integer >= 1, got 0"),
        (
            "selfplay",
            {"mcts": {"simz": 3}},
            r"unknown parameter 'selfplay\.mcts\.simz'. Did you mean 'selfplay\.mcts\.sims'",
        ),
        (
            "selfplay",
            {"node": {"executor": "dask"}},
            r"selfplay\.node\.executor must be 'local' or 'ray'",
        ),
        ("selfplay", {"mcts": 16}, r"selfplay\.mcts must be a mapping of keys, got 16"),
        (
            "evaluate",
            {"previous": {"mcts": {"search": "ucb"}}},
            r"evaluate\.previous\.mcts\.search must be one of \('puct', 'gumbel'\), got 'ucb'",
        ),
        (
            "reinforce.train",
            {"node": {"num_threads": 0}},
            r"reinforce\.train\.node\.num_threads must be null or an integer >= 1",
        ),
        ("evaluate", {"num_games": -5}, r"evaluate\.num_games must be an integer >= 2"),
        ("train", {"lr": -1}, r"train\.lr must be in \(0, 1\.0\], got -1"),
        ("train", {"lr_min": 1.0}, r"train\.lr_min must be in \(0, lr=0\.003\]"),
        ("train", {"lr": 1e30}, r"train\.lr must be in \(0, 1\.0\], got 1e\+30"),
        ("train", {"weight_decay": 5}, r"train\.weight_decay must be in \[0, 1\)"),
        ("train", {"value_coef": 1e4}, r"train\.value_coef must be in \[0, 100\], got 10000"),
        ("model", {"preset": "huge"}, r"unknown model preset 'huge'"),
        ("alphazero", {"num_generations": 0}, r"alphazero\.num_generations must be an integer"),
        ("reinforce", {"num_chunks": 1000}, r"reinforce\.num_chunks must be an integer"),
        ("scorecard", {"alphazero": "rf_001"}, r"scorecard\.alphazero must be null or a name"),
    ],
)
def test_bad_values_name_their_key(section, params, message):
    with pytest.raises(ValueError, match=message):
        parse_section(section, params)


def test_a_reinforce_loss_weight_has_a_bound():
    from connect_zero_pipeline.core.config.reinforce import ReinforceConfig

    with pytest.raises(ValueError, match=r"beta must be in \[0, 100\], got 1000"):
        ReinforceConfig(beta=1e3)


def test_an_unknown_section_names_the_nearest():
    params = load_parameters(CONF)
    params["selfply"] = {"sims": 3}
    with pytest.raises(ValueError, match=r"unknown parameter 'selfply'. Did you mean 'selfplay'"):
        parse_run_params(params)


def test_a_nested_key_changes_only_itself():
    """``selfplay.mcts.sims`` changes the simulations and keeps the rest of self-play's
    search (its Gumbel search and noise), not MCTSConfig's class defaults."""
    cfg = parse_section("selfplay", {"mcts": {"sims": 32}, "node": {"workers": 1}})
    assert (cfg.mcts.sims, cfg.mcts.search, cfg.mcts.dirichlet_eps) == (32, "gumbel", 0.25)
    assert (cfg.node.workers, cfg.node.num_threads) == (1, 1)
    train = parse_section("train", {"node": {"device": "cpu"}})
    assert train.node.num_threads is None  # train's own node default


def test_every_search_is_one_type():
    """A search is an MCTSConfig wherever it is configured (one definition of each setting)."""
    from connect_zero_pipeline.core.config.search import MCTSConfig

    built = parse_run_params(load_parameters(CONF))
    searches = [built.selfplay.mcts, built.evaluate.mcts, built.evaluate.previous.mcts,
                built.ladder.mcts, built.scorecard.mcts]  # fmt: skip
    assert all(type(s) is MCTSConfig for s in searches)

"""The unrolled DAG follows the run's configuration: env files and --params alike."""

from __future__ import annotations

import pytest
import yaml
from kedro.framework.project import pipelines
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

from connect_zero_pipeline.params.schema import parse_run_params
from connect_zero_pipeline.pipelines.structure import reading
from connect_zero_pipeline.session.project_session import ProjectSession
from tests.helpers import store_untouched


def _alphazero(project, env=None, params=None):
    bootstrap_project(project)
    with ProjectSession.create(project_path=project, env=env, runtime_params=params) as session:
        session.load_context()  # validates the parameters
        with reading(parse_run_params(session.parameters())):  # as its run builds its pipelines
            return pipelines["alphazero"]


def _generations(pipe) -> list[str]:
    return sorted({n.namespace for n in pipe.nodes if n.namespace})


def test_defaults_env_and_runtime_params_shape_the_dag(kedro_project):
    base = yaml.safe_load((kedro_project / "conf/base/parameters_alphazero.yml").read_text())
    default = base["alphazero"]["num_generations"]
    assert _generations(_alphazero(kedro_project))[-1] == f"gen_{default:03d}"
    gpu = yaml.safe_load((kedro_project / "conf/gpu/parameters.yml").read_text())
    assert gpu["alphazero"]["num_generations"] != default  # the env's own count shapes it
    expected = f"gen_{gpu['alphazero']['num_generations']:03d}"
    assert _generations(_alphazero(kedro_project, env="gpu"))[-1] == expected
    pipe = _alphazero(
        kedro_project, params={"alphazero": {"num_generations": 3}, "train": {"buffer_gens": 2}}
    )
    assert _generations(pipe) == ["gen_000", "gen_001", "gen_002", "gen_003"]
    train3 = next(n for n in pipe.nodes if n.name == "gen_003.train")
    assert [i for i in train3.inputs if i.endswith(".games")] == ["gen_002.games", "gen_003.games"]
    evaluate1 = next(n for n in pipe.nodes if n.name == "gen_001.evaluate")
    assert "gen_000.model" in evaluate1.inputs


def test_a_bad_structural_value_is_named(kedro_project):
    with pytest.raises(
        Exception, match="alphazero.num_generations must be an integer in \\[1, 999\\], got 0"
    ):
        _alphazero(kedro_project, params={"alphazero": {"num_generations": 0}})


def test_a_plain_kedro_session_refuses_a_shape_it_would_not_build(kedro_project):
    """A plain KedroSession builds the pipelines from conf/: it refuses runtime parameters
    that would change their shape, instead of ignoring them."""
    bootstrap_project(kedro_project)
    params = {"alphazero": {"num_generations": 3}}
    session = KedroSession.create(project_path=kedro_project, runtime_params=params)
    with (
        session,
        pytest.raises(Exception, match=r"alphazero.num_generations=3 change the pipelines"),
    ):
        session.load_context()
    assert store_untouched(kedro_project)


def test_a_plain_kedro_session_refuses_a_start_it_would_ignore(kedro_project):
    bootstrap_project(kedro_project)
    params = {"model": {"start_from": "models:/connect-zero@champion"}}
    session = KedroSession.create(project_path=kedro_project, runtime_params=params)
    with (
        session,
        pytest.raises(
            Exception,
            match=r"model.start_from='models:/connect-zero@champion': "
            r"this session would ignore it",
        ),  # fmt: skip
    ):
        session.load_context()
    assert store_untouched(kedro_project)


def _ancestors(pipe, name: str) -> set[str]:
    """Every node ``name`` waits for, directly or not."""
    parents = {n.name: {p.name for p in ps} for n, ps in pipe.node_dependencies.items()}
    seen, todo = set(), [name]
    while todo:
        for parent in parents[todo.pop()] - seen:
            seen.add(parent)
            todo.append(parent)
    return seen


@pytest.mark.parametrize("gating", [False, True])
def test_the_scorecard_is_off_the_loops_path_and_only_the_gate_is_on_it(kedro_project, gating):
    pipe = _alphazero(kedro_project, params={"alphazero": {"num_generations": 3},
                                             "evaluate": {"gating": gating}})  # fmt: skip
    for k in (2, 3):
        waits_for = _ancestors(pipe, f"gen_{k:03d}.self_play")
        stages = {name.split(".", 1)[1] for name in waits_for if name.startswith("gen_00")}
        assert not {n for n in waits_for if n.endswith(".evaluate")}, waits_for
        assert stages == ({"self_play", "train", "gate", "init_model", "start_games"} if gating
                          else {"self_play", "train", "init_model", "start_games"})  # fmt: skip
        assert "label_public_sets" not in waits_for  # only the scorecards need the labels
    evaluate = next(n for n in pipe.nodes if n.name == "gen_002.evaluate")
    node_names = {n.name for n in pipe.nodes}
    assert ("gen_002.gate" in node_names) == gating
    if gating:  # the scorecard takes the gate's match; the gate writes the model
        assert set(evaluate.inputs) >= {"gen_002.candidate", "gen_002.gate_match"}
        gate = next(n for n in pipe.nodes if n.name == "gen_002.gate")
        assert set(gate.outputs) == {"gen_002.model", "gen_002.gate_match"}
    else:  # the scorecard plays the previous model itself; train writes the model
        assert set(evaluate.inputs) >= {"gen_002.model", "gen_001.model"}
        train = next(n for n in pipe.nodes if n.name == "gen_002.train")
        assert "gen_002.model" in train.outputs
    assert evaluate.outputs == ["gen_002.eval_metrics"]

"""A run's parameters are parsed once, into typed sections, which whoever needs a section
of the run reads; a raw parameter mapping is parsed only by the schema, the run's plan, and
each node at Kedro's boundary (its ``params:`` input)."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

import connect_zero_pipeline
from connect_zero_pipeline.params import schema

PACKAGE = Path(connect_zero_pipeline.__file__).parent
PARSERS = {"parse_section", "parse_run_params", "from_params"}
"""The functions that turn a raw mapping into a section's dataclass."""
ALLOWED = {
    "params/schema.py",  # the parser
    "params/schedule.py",  # a section's phases, built as the section is (part of its parse)
    "run/context.py",  # the run's plan: once, before anything is written
    "session/project_session.py",  # a session with no run planned (kedro ipython, viz)
    "pipelines/structure.py",  # conf/ outside a session (kedro registry, viz)
}


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))}  # fmt: skip


def test_only_the_plan_and_the_nodes_parse_raw_parameters():
    parsing = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if _calls(p) & PARSERS and not p.match("core/config/*.py")  # the parser itself
    }
    nodes = {p for p in parsing if p.startswith("pipelines/") and p.endswith("/nodes.py")}
    assert parsing - nodes == ALLOWED


def test_a_run_is_parsed_once(monkeypatch, kedro_project):
    """From the session's start to the summary: one parse of the whole mapping, each section
    once, every later reader (runner, pipelines' shape, summary, MLflow names) reading the
    run's sections; a node parses only its own ``params:`` input."""
    from kedro.framework.startup import bootstrap_project

    from connect_zero_pipeline.run import context
    from connect_zero_pipeline.session.project_session import ProjectSession

    runs, sections_parsed = [], []
    real_run, real_section = context.parse_run_params, schema.parse_section

    def run_parsed(params):
        runs.append(1)
        return real_run(params)

    def section_parsed(section, params):
        if not sys._getframe(1).f_globals["__name__"].endswith(".nodes"):  # a node's own: allowed
            sections_parsed.append(section)
        return real_section(section, params)

    monkeypatch.setattr(context, "parse_run_params", run_parsed)
    monkeypatch.setattr(schema, "parse_section", section_parsed)  # every parse in the schema
    bootstrap_project(kedro_project)
    params = {"baselines": {"num_games": 4}}
    with ProjectSession.create(project_path=kedro_project, runtime_params=params) as session:
        session.run(pipeline_names=["baselines"])
        sections = session.life.context.sections
    assert len(runs) == 1 and sections.baselines.num_games == 4
    assert Counter(sections_parsed) == dict.fromkeys(schema.SCHEMA, 1)

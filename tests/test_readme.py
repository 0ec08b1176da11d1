"""Every command the README shows exists: a make target, a kedro pipeline (with valid
parameters and env), a ``python -m connect_zero_pipeline`` subcommand, or a set-up tool."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.M | re.S)
SETUP_TOOLS = {"pip", "npm", "source", "cd", "git"}  # set-up steps, not project commands
README_LIMIT = 250
HELP_FLAGS = ("--help", "-h")


def readme_commands(text: str) -> list[list[str]]:
    """The commands of the README's shell blocks, as argument lists (comments dropped,
    ``a && b`` split)."""
    commands = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():  # a continued line is one
            line = re.sub(r"(^|\s)#.*$", "", line).strip().removeprefix("$ ")
            for part in line.split("&&"):
                if part.strip():
                    commands.append(shlex.split(part))
    return commands


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    return {m for m in re.findall(r"^([A-Za-z][\w-]*):", text, re.M)}


def _params(arg: str) -> dict:
    """``--params "a.b=1,c.d=x"`` as a nested dict (values parsed as YAML scalars)."""
    import yaml

    nested: dict = {}
    for item in arg.split(","):
        key, _, value = item.partition("=")
        *parents, leaf = key.split(".")
        node = nested
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value)
    return nested


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out.get(k) or {}, v) if isinstance(v, dict) else v
    return out


def check_kedro(args: list[str], pipelines: set[str], base_params: dict) -> str | None:
    """None if ``kedro <args>`` names an existing subcommand, pipelines, env and valid
    parameters; else what is wrong."""
    from connect_zero_pipeline.params.schema import parse_run_params

    if args[:1] == ["viz"]:
        import kedro_viz  # noqa: F401  (the plugin that provides `kedro viz`)

        return None
    if args[:1] != ["run"]:
        return f"unknown kedro subcommand {args[:1]}"
    params = base_params
    i = 1
    while i < len(args):
        arg = args[i]
        name, _, value = arg.partition("=")
        if not value and name in {"--pipelines", "--pipeline", "--env", "--params", "-e"}:
            i += 1
            value = args[i]
        if name in {"--pipelines", "--pipeline"}:
            unknown = set(value.split(",")) - pipelines
            if unknown:
                return f"unknown pipeline(s) {sorted(unknown)}"
        elif name in {"--env", "-e"} and not (REPO / "conf" / value).is_dir():
            return f"no env conf/{value}"
        elif name == "--params":
            try:
                parse_run_params(_merge(params, _params(value)))
            except ValueError as exc:
                return str(exc)
        i += 1
    return None


@pytest.fixture(scope="module")
def project_facts():
    from kedro.config import OmegaConfigLoader
    from kedro.framework.project import configure_project, pipelines

    from connect_zero_pipeline.commands import cli
    from connect_zero_pipeline.common.config_loader import CONFIG_LOADER_ARGS

    configure_project("connect_zero_pipeline")
    loader = OmegaConfigLoader(conf_source=str(REPO / "conf"), **CONFIG_LOADER_ARGS)
    base = {k: v for k, v in dict(loader["parameters"]).items()}
    return set(pipelines), base, set(cli.list_commands(None))


def test_every_readme_command_exists(project_facts):
    pipelines, base_params, subcommands = project_facts
    commands = readme_commands((REPO / "README.md").read_text())
    assert len(commands) >= 10
    targets = make_targets()
    problems = []
    for argv in commands:
        tool, args = argv[0], argv[1:]
        if tool == "make":
            missing = [a for a in args if "=" not in a and a not in targets]
            problem = f"no make target {missing}" if missing else None
        elif tool == "kedro":
            problem = check_kedro(args, pipelines, base_params)
        elif tool == "python" and args[:2] == ["-m", "connect_zero_pipeline"]:
            known = args[2:3] and (args[2] in subcommands or args[2] in HELP_FLAGS)
            problem = None if known else "unknown subcommand"
        elif tool == "python" and args[:2] == ["-m", "venv"]:
            problem = None
        elif tool == "mlflow":
            problem = None if args[:1] == ["ui"] else "only `mlflow ui` is expected"
        elif tool == "curl":  # a request to `make serve`, at its default port
            port = re.search(r"^SERVE_PORT \?= (\d+)$", (REPO / "Makefile").read_text(), re.M)
            url = f"http://127.0.0.1:{port.group(1)}/invocations" if port else None
            problem = None if url in args else f"only `make serve`'s {url} is expected"
        elif tool in SETUP_TOOLS:
            problem = None
        else:
            problem = "not a make target, kedro, project or set-up command"
        if problem:
            problems.append(f"{shlex.join(argv)}: {problem}")
    assert problems == []


def test_continued_lines_are_one_command():
    text = "```bash\ncurl -s http://x \\\n  -d '{}'  # a comment\nmake test\n```\n"
    assert readme_commands(text) == [["curl", "-s", "http://x", "-d", "{}"], ["make", "test"]]


def test_the_checker_catches_wrong_commands(project_facts):
    pipelines, base_params, _ = project_facts
    assert check_kedro(["run", "--pipelines=alphazeroo"], pipelines, base_params)
    assert check_kedro(["run", "--env", "tpu"], pipelines, base_params) == "no env conf/tpu"
    assert "selfplay.simz" in check_kedro(["run", "--params", "selfplay.simz=3"], pipelines,
                                          base_params)  # fmt: skip
    assert check_kedro(["run", "--pipeline", "reinforce"], pipelines, base_params) is None
    assert "lint" in make_targets() and "nonsense" not in make_targets()
    assert readme_commands("```bash\nmake run  # x\nA=1 && kedro run\n```\n") == [
        ["make", "run"],
        ["A=1"],
        ["kedro", "run"],
    ]


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_LIMIT, f"README.md has {lines} lines (limit {README_LIMIT})"


def docs_kedro_commands() -> list[tuple[str, list[str]]]:
    """``(file, argv)`` of every inline ```kedro run ...``` in the docs and conf/README.md."""
    found = []
    for path in [*sorted((REPO / "docs").glob("*.md")), REPO / "conf" / "README.md"]:
        text = path.read_text()
        for code in re.findall(r"`([^`]*\bkedro run[^`]*)`", text):
            if "git checkout" in code[: code.index("kedro run")]:  # runs at that commit
                continue
            argv = shlex.split(code[code.index("kedro run") :].replace("\n", " "))
            if any("..." in a or "<" in a or a.isupper() for a in argv):  # elided, a template
                continue
            env = next((b for a, b in itertools.pairwise(argv) if a in ("--env", "-e")), None)
            if env and f"conf/{env}/" in text:  # an env the doc shows how to write
                continue
            found.append((path.name, argv))
    return found


def test_every_kedro_command_in_the_docs_is_valid(project_facts):
    """Each doc's figures come with the command that makes them: every such command still
    names real pipelines, envs and parameters (the parameters' names move with the code)."""
    pipelines, base_params, _ = project_facts
    commands = docs_kedro_commands()
    assert len(commands) >= 25
    problems = [f"{name}: {shlex.join(argv)}: {problem}" for name, argv in commands
                if (problem := check_kedro(argv[1:], pipelines, base_params))]  # fmt: skip
    assert problems == []

"""The wheels a machine lacks (``scripts/offline_wheels.sh download --have FREEZE``).

The project's dependencies (less torch; its ``dev`` extra with ``--dev``) are resolved for
the target (``PYTHON_VERSION``/``PLATFORM``, else this interpreter), with every package the
machine has pinned to the version it has (FREEZE is its ``pip list --format=freeze``); then
only the packages it lacks are downloaded, each at the resolved version, with no other
dependency. Prints the count and the MB.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(dev: bool) -> list[str]:
    """The project's dependencies (and its ``dev`` extra), less torch: the machine has its own."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + (project["optional-dependencies"]["dev"] if dev else [])
    return [d for d in deps if canonical(re.split(r"[\[<>=~! ;]", d)[0]) != "torch"]


def have(freeze: Path) -> dict[str, str]:
    """``{canonical name: version}`` of a ``pip list --format=freeze`` (or ``pip freeze``)."""
    found = {}
    for line in freeze.read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name and not name.startswith("#"):
            found[canonical(name)] = version.strip()
    return found


def target_args() -> list[str]:
    """pip's target options from ``PYTHON_VERSION`` and ``PLATFORM`` (none: this Python)."""
    args = []
    if os.environ.get("PYTHON_VERSION"):
        args += ["--python-version", os.environ["PYTHON_VERSION"]]
    if os.environ.get("PLATFORM"):
        args += ["--platform", os.environ["PLATFORM"]]
    return args + (["--only-binary=:all:"] if args else [])


def resolve(reqs: list[str], pins: dict[str, str]) -> dict[str, str]:
    """``{name: version}`` pip would install for ``reqs`` on the target, ``pins`` held."""
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "constraints.txt"
        # A local build (torch's +cu130) or a direct reference is no index's: not a pin.
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()
                                       if re.fullmatch(r"[0-9][0-9A-Za-z.!]*", v)))  # fmt: skip
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
               "--quiet", "--report", str(report), "-c", str(constraints),
               "--target", str(Path(tmp) / "target"), *target_args(), *reqs]  # fmt: skip
        subprocess.run(cmd, check=True)
        installs = json.loads(report.read_text())["install"]
    return {canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in installs}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: offline_wheels.py FREEZE DIR [--dev]", file=sys.stderr)
        return 2
    freeze, dest, dev = Path(argv[0]), Path(argv[1]), "--dev" in argv[2:]
    if not freeze.is_file():
        print(f"offline_wheels: --have {freeze}: no such file (the GPU machine's "
              "`pip list --format=freeze`)", file=sys.stderr)  # fmt: skip
        return 2
    pins = have(freeze)
    needed = resolve(requirements(dev), pins)
    lacking = sorted((n, v) for n, v in needed.items() if n not in pins)
    dest.mkdir(parents=True, exist_ok=True)
    if lacking:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--dest", str(dest), *target_args(),
                        *(f"{n}=={v}" for n, v in lacking)], check=True)  # fmt: skip
    for sdist in [*dest.glob("*.tar.gz"), *dest.glob("*.zip")]:  # the target builds nothing
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--wheel-dir", str(dest), str(sdist)], check=True)  # fmt: skip
        sdist.unlink()
    wheels = sorted(dest.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels) / 1e6
    kept = len(needed) - len(lacking)
    print(f"{len(wheels)} wheels, {size:.0f} MB, in {dest}: what the machine lacks of "
          f"{len(needed)} packages ({kept} it has; torch is its own)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

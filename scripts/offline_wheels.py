"""The wheels a machine without internet needs (``scripts/offline_wheels.sh download``).

    offline_wheels.py download [--have FREEZE] [--python 3.12] [--manylinux 2.28] [--dev]
                               [--with viz] [--limit-mb 60] [DIR]

The project's dependencies (less torch, which such a machine has with its CUDA build; the
``dev`` extra with ``--dev``) are resolved for the target: ``--python`` (default: this
interpreter's version) on x86-64 Linux with every manylinux tag up to ``--manylinux``
(default 2.28, what torch's own wheels need), whatever Python runs this script. The
resolution runs with a current pip (25 or newer: it checks ``Requires-Python`` against the
target, not against the Python that runs it), in an isolated environment when this one's is
older.

With ``--have FREEZE`` (the machine's ``pip list --format=freeze``) the machine's packages
are used as they are, never pinned into a failure: the first resolution has no pins, each
machine package whose version every resolved requirement accepts is then held at it and the
dependencies resolved again; only the packages the machine lacks are downloaded, each at its
resolved version with no other dependency (they are installed with ``--no-deps``), and a
machine version outside a resolved package's range is reported by name ("pyarrow 26.0.1 on
the machine; mlflow 3.17.2 wants <26: may fail at import"). kedro-viz (and what it alone
needs) comes only with ``--with viz``: a run does not use it. Without ``--have`` the bundle is
every dependency, kedro-viz and the build backend included, for ``offline_wheels.sh check``
and ``install`` (``pip install -e`` from the folder alone).

Prints the count and the size (MiB) of the bundle, and with ``--limit-mb`` whether it fits
(exit status 1 when it does not). The resolution is recorded in DIR (:data:`RESOLUTION`): the
same download again resolves and downloads nothing. Source-only packages are built into
wheels here, so the target builds nothing. DIR (default ``.whl``) must hold no other wheels:
``install --target`` takes every wheel there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
MIN_PIP = (25, 0)
VIZ = "kedro-viz"
"""The one dependency a run does not use (``make viz``): in a ``--have`` bundle only with
``--with viz``."""
BUILD = ["setuptools>=61", "wheel"]
"""The project's build backend: ``pip install -e`` builds it offline from the full bundle."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return canonical(re.split(r"[\[<>=~! ;]", requirement.strip())[0])


def requirements(dev: bool, viz: bool) -> list[str]:
    """The project's dependencies (its ``dev`` extra with ``dev``; kedro-viz only with
    ``viz``), less torch: the machine has its own."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + (project["optional-dependencies"]["dev"] if dev else [])
    drop = {"torch"} | (set() if viz else {VIZ})
    return [d for d in deps if requirement_name(d) not in drop]


def have(freeze: Path) -> dict[str, str]:
    """``{canonical name: version}`` of a ``pip list --format=freeze`` (or ``pip freeze``)."""
    found = {}
    for line in freeze.read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name and not name.startswith("#"):
            found[canonical(name)] = version.strip()
    return found


def target_args(python: str, manylinux: str) -> list[str]:
    """pip's options for CPython ``python`` on x86-64 Linux with every manylinux tag up to
    ``manylinux`` (glibc ``major.minor``): binary wheels only, as the target builds nothing."""
    major, minor = (int(x) for x in manylinux.split("."))
    tags = [f"manylinux_{major}_{m}_x86_64" for m in range(minor, 4, -1)]
    tags += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    args = ["--python-version", python, "--implementation", "cp", "--only-binary=:all:"]
    for tag in tags:
        args += ["--platform", tag]
    return args


def pip_command() -> list[str]:
    """A pip of at least :data:`MIN_PIP`: this interpreter's, or one in an isolated
    environment made once in the user's cache folder (``~/.cache/connect-zero-pip``)."""
    version = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                             text=True).stdout.split()  # fmt: skip
    if len(version) > 1 and tuple(int(x) for x in version[1].split(".")[:2]) >= MIN_PIP:
        return [sys.executable, "-m", "pip"]
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "connect-zero-pip"
    python = home / "bin" / "python"
    if not python.exists():
        print(f"offline_wheels: pip {version[1] if len(version) > 1 else '?'} here; a current "
              f"pip in {home} resolves for the target", flush=True)  # fmt: skip
        venv.create(home, with_pip=True, clear=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade",
                        f"pip>={MIN_PIP[0]}"], check=True)  # fmt: skip
    return [str(python), "-m", "pip"]


def resolve(pip: list[str], reqs: list[str], pins: dict[str, str], target: list[str]) -> list[dict]:
    """What pip would install for ``reqs`` on the target with ``pins`` held: its report's
    ``install`` items (name, version, ``requires_dist``)."""
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()))
        report = Path(tmp) / "report.json"
        cmd = [*pip, "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
               str(report), "-c", str(constraints), "--target", str(Path(tmp) / "target"),
               *target, *reqs]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(res.stderr.strip()[-3000:] or "pip could not resolve")
        return json.loads(report.read_text())["install"]


def _environment(python: str) -> dict[str, str]:
    """Marker values of CPython ``python`` on x86-64 Linux."""
    return {"python_version": ".".join(python.split(".")[:2]), "python_full_version":
            python if python.count(".") == 2 else f"{python}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "platform_machine": "x86_64", "extra": ""}  # fmt: skip


def conflicts(installs: list[dict], machine: dict[str, str], python: str) -> list[str]:
    """The machine's versions that a resolved package's requirement rejects, in words."""
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version

    env = _environment(python)
    found = []
    for item in installs:
        meta = item["metadata"]
        for text in meta.get("requires_dist") or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            name = canonical(req.name)
            if name not in machine or not req.specifier:
                continue
            try:
                ok = req.specifier.contains(Version(machine[name]), prereleases=True)
            except InvalidVersion:
                continue
            if not ok:
                found.append(f"{name} {machine[name]} on the machine; {meta['name']} "
                             f"{meta['version']} wants {req.specifier}: may fail at import")  # fmt: skip
    return sorted(set(found))


def held(installs: list[dict], machine: dict[str, str], python: str) -> dict[str, str]:
    """The machine's packages, among those resolved, whose version every resolved
    requirement accepts (a local build such as torch's ``+cu130`` is no index's: never held)."""
    rejected = {c.split(" ", 1)[0] for c in conflicts(installs, machine, python)}
    names = {canonical(i["metadata"]["name"]) for i in installs}
    return {n: v for n, v in machine.items() if n in names and n not in rejected
            and re.fullmatch(r"[0-9][0-9A-Za-z.!]*", v)}  # fmt: skip


def download(pip: list[str], wanted: dict[str, str], dest: Path, target: list[str]) -> None:
    """Each ``name==version`` as a wheel for the target (no dependencies); a package with no
    such wheel is downloaded as a source and built into a wheel here."""
    specs = [f"{n}=={v}" for n, v in sorted(wanted.items())]
    res = subprocess.run([*pip, "download", "--quiet", "--no-deps", "--dest", str(dest), *target,
                          *specs], capture_output=True, text=True)  # fmt: skip
    if res.returncode != 0:  # one by one: which ones have no wheel for the target
        for spec in specs:
            one = subprocess.run([*pip, "download", "--quiet", "--no-deps", "--dest", str(dest),
                                  *target, spec], capture_output=True, text=True)  # fmt: skip
            if one.returncode != 0:
                subprocess.run([*pip, "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                                "--dest", str(dest), spec], check=True)  # fmt: skip
    for sdist in [*dest.glob("*.tar.gz"), *dest.glob("*.zip")]:  # the target builds nothing
        subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dest),
                        str(sdist)], check=True)  # fmt: skip
        sdist.unlink()


def _resolve(pip, reqs, machine, target, python) -> list[dict]:
    """The bundle's packages: resolved with no pins, then with the machine's versions that
    every resolved requirement accepts held (module docstring)."""
    first = resolve(pip, reqs, {}, target)
    if not machine:
        return first
    try:
        return resolve(pip, reqs, held(first, machine, python), target)
    except RuntimeError:  # the held versions conflict among themselves: the first resolution
        return first


RESOLUTION = ".resolution.json"
"""The folder's record of the resolution that made its bundle, by what it was asked (the
project's requirements, the machine's packages, the target): the same download again
resolves nothing (pip's resolution is most of its 15 s)."""


def resolved(dest: Path, asked: list, resolve_now) -> list[dict]:
    """``resolve_now()``'s result, or the one recorded in ``dest`` for the same question."""
    import hashlib

    key = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
    record = dest / RESOLUTION
    try:
        kept = json.loads(record.read_text())
        if kept.get("key") == key:
            return kept["installs"]
    except (OSError, ValueError):
        pass
    installs = [{"metadata": {k: i["metadata"].get(k) for k in ("name", "version",
                 "requires_dist")}} for i in resolve_now()]  # fmt: skip
    dest.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"key": key, "installs": installs}))
    return installs


def bundle_of(installs: list[dict], machine: dict[str, str]) -> tuple[dict, dict]:
    """``(needed, lacking)``, ``{name: version}`` each: every resolved package, and those of
    them the machine lacks (torch never: the machine has its own build)."""
    needed = {canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in installs}
    return needed, {n: v for n, v in needed.items() if n not in machine and n != "torch"}


def wheel_name(path: Path) -> str:
    return canonical(path.name.split("-")[0])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/offline_wheels.sh download",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("dir", nargs="?", type=Path, default=REPO / ".whl")
    parser.add_argument("--have", type=Path, action="append", default=None,
                        help="the machine's `pip list --format=freeze`; given more than once, the "
                             "packages every machine has (resolved at the first one's versions)")  # fmt: skip
    parser.add_argument("--python", default=".".join(map(str, sys.version_info[:2])),
                        help="the machine's Python, e.g. 3.12 (default: this one's)")  # fmt: skip
    parser.add_argument(
        "--manylinux",
        default="2.28",
        help="the newest manylinux the machine's glibc accepts (default 2.28)",
    )
    parser.add_argument("--dev", action="store_true", help="also the dev extra (pytest, ...)")
    parser.add_argument("--with", dest="extra", action="append", default=[], choices=["viz"],
                        help="viz: also kedro-viz (a --have bundle leaves it out)")  # fmt: skip
    parser.add_argument(
        "--limit-mb",
        type=float,
        default=None,
        help="say whether the bundle fits this many MiB (exit 1 if not)",
    )
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.\d+(\.\d+)?", args.python):
        parser.error(f"--python {args.python!r}: a CPython version such as 3.12")
    if not re.fullmatch(r"2\.\d+", args.manylinux):
        parser.error(f"--manylinux {args.manylinux!r}: a glibc version such as 2.28")
    machine: dict[str, str] = {}
    for freeze in args.have or []:
        if not freeze.is_file():
            print(f"offline_wheels: --have {freeze}: no such file (the GPU machine's "
                  "`pip list --format=freeze`)", file=sys.stderr)  # fmt: skip
            return 2
        found = have(freeze)  # what every machine has, at the first one's version
        machine = (
            found
            if freeze == args.have[0]
            else {name: version for name, version in machine.items() if name in found}
        )
    viz = args.have is None or "viz" in args.extra
    reqs = requirements(args.dev or args.have is None, viz)
    if args.have is None:
        reqs += BUILD
    target = target_args(args.python, args.manylinux)
    dest = args.dir.resolve()
    pip = pip_command()
    installs = resolved(dest, [reqs, machine, target], lambda: _resolve(pip, reqs, machine,
                                                                          target, args.python))  # fmt: skip
    needed, lacking = bundle_of(installs, machine)
    dest.mkdir(parents=True, exist_ok=True)
    others = sorted(w.name for w in dest.glob("*.whl") if wheel_name(w) not in lacking)
    if others:
        print(f"offline_wheels: {dest} holds {len(others)} wheels of no part of this bundle "
              f"({', '.join(others[:5])}{', ...' if len(others) > 5 else ''}): install "
              "--target takes every wheel there; remove them or name another folder",
              file=sys.stderr)  # fmt: skip
        return 2
    download(pip, lacking, dest, target)
    wheels = sorted(w for w in dest.glob("*.whl") if wheel_name(w) in lacking)
    size = sum(w.stat().st_size for w in wheels) / 2**20
    for line in conflicts(installs, machine, args.python):
        print(f"offline_wheels: {line}")
    kept = len(needed) - len(lacking)
    print(f"{len(wheels)} wheels, {size:.1f} MiB, in {dest}: for Python {args.python} "
          f"(manylinux <= {args.manylinux}), what the machine lacks of {len(needed)} packages "
          f"({kept} it has; torch is its own)")  # fmt: skip
    if args.limit_mb is not None:
        fits = size <= args.limit_mb
        print(f"{'fits' if fits else 'does NOT fit'} the {args.limit_mb:g} MiB limit"
              + ("" if fits else f" (over by {size - args.limit_mb:.1f} MiB)"))  # fmt: skip
        return 0 if fits else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

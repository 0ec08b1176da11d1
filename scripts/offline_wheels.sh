#!/usr/bin/env bash
# Wheels for a GPU machine without internet (docs/gpu.md): everything the project needs
# except torch, which such a machine has with its CUDA build.
#
#   scripts/offline_wheels.sh download [DIR]   on a connected machine: into DIR (.whl/)
#   scripts/offline_wheels.sh download --have FREEZE [--dev] [DIR]
#                                              only what the GPU machine lacks: FREEZE is its
#                                              `pip list --format=freeze` (no dev extra unless
#                                              --dev); prints the count and the MB
#   scripts/offline_wheels.sh check [DIR]      a clean venv installs the project from DIR
#                                              alone (--no-index): the list is complete
#   scripts/offline_wheels.sh install [DIR]    on the GPU machine: .venv (with the machine's
#                                              torch: --system-site-packages) from DIR alone
#   scripts/offline_wheels.sh install --target TARGET [DIR]
#                                              where no venv can be made: every wheel of DIR
#                                              into TARGET (--no-deps); prints the PYTHONPATH
#
# A GPU machine with another Python or platform: download with, for example,
#   PYTHON_VERSION=3.10 PLATFORM=manylinux_2_28_x86_64 scripts/offline_wheels.sh download
# (a second pass takes binary wheels for that target; source-only packages are built
# into pure-Python wheels here first, so the target builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
shift || true
freeze="" target="" dev=""
while [ $# -gt 0 ]; do
  case "$1" in
    --have) freeze=$(realpath -m "${2:?--have needs a file: pip list --format=freeze of the GPU machine}"); shift 2 ;;
    --target) target=$(realpath -m "${2:?--target needs a folder}"); shift 2 ;;
    --dev) dev=--dev; shift ;;
    -*) echo "offline_wheels: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
dir=$(realpath -m "${1:-.whl}")
py=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}

requirements() {  # the project's dependencies and its dev extra (pytest), less torch
  "$py" - <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for dep in project["dependencies"] + project["optional-dependencies"]["dev"]:
    if re.split(r"[\[<>=~! ]", dep)[0] != "torch":
        print(dep)
PY
  echo "setuptools>=61"  # the project's build backend: pip install -e builds it offline
  echo "wheel"
}

case "$cmd" in
download)
  if [ -n "$freeze" ]; then
    exec "$py" scripts/offline_wheels.py "$freeze" "$dir" $dev
  fi
  mkdir -p "$dir"
  reqs="$dir/requirements.txt"
  requirements > "$reqs"
  "$py" -m pip download --quiet --dest "$dir" -r "$reqs"
  # Source-only packages become wheels now: the target then needs no compiler or backend.
  shopt -s nullglob
  for sdist in "$dir"/*.tar.gz "$dir"/*.zip; do
    "$py" -m pip wheel --quiet --no-deps --wheel-dir "$dir" "$sdist" && rm "$sdist"
  done
  if [ -n "${PYTHON_VERSION:-}${PLATFORM:-}" ]; then
    "$py" -m pip download --quiet --dest "$dir" --find-links "$dir" --only-binary=:all: \
      ${PYTHON_VERSION:+--python-version "$PYTHON_VERSION"} ${PLATFORM:+--platform "$PLATFORM"} \
      -r "$reqs"
  fi
  echo "$(ls "$dir"/*.whl | wc -l) wheels, $(du -sh "$dir" | cut -f1), in $dir"
  ;;
check)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$py" -m venv "$tmp/venv"
  # torch and its own dependencies as the GPU machine has them (here this machine's wheel
  # and package index, there its CUDA build): not part of the list under test.
  "$tmp/venv/bin/python" -m pip install --quiet \
    "torch==$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')"
  # Everything else from DIR alone: no index, no other wheel folder, no pip config.
  PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS="$dir" "$tmp/venv/bin/python" -m pip install \
    --quiet --no-index --find-links "$dir" -e ".[dev]"
  "$tmp/venv/bin/python" -c "import kedro, kedro_mlflow, mlflow, pytest, connect_zero_pipeline.core.compiled; print('complete: kedro', kedro.__version__, 'mlflow', mlflow.__version__)"
  ;;
install)
  if [ -n "$target" ]; then
    shopt -s nullglob
    wheels=("$dir"/*.whl)
    [ ${#wheels[@]} -gt 0 ] || { echo "offline_wheels: no wheels in $dir" >&2; exit 2; }
    PIP_CONFIG_FILE=/dev/null python3 -m pip install --quiet --no-index --no-deps \
      --target "$target" "${wheels[@]}"
    echo "${#wheels[@]} wheels in $target; run the project with:"
    echo "  export PYTHONPATH=$target:$PWD/src; python3 -m kedro run --env gpu"
    exit 0
  fi
  test -x .venv/bin/python || python3 -m venv --system-site-packages .venv
  PIP_FIND_LINKS="$dir" .venv/bin/python -m pip install --no-index --find-links "$dir" -e ".[dev]"
  ;;
*)
  sed -n '2,23p' "$0"
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Wheels for a GPU machine without internet (docs/gpu.md): everything the project needs
# except torch, which such a machine has with its CUDA build.
#
#   scripts/offline_wheels.sh download --have FREEZE --python 3.12 [--limit-mb 40] [DIR]
#                                    on a connected machine, any Python: only what the GPU
#                                    machine lacks (FREEZE: its `pip list --format=freeze`),
#                                    for its Python and every manylinux tag up to --manylinux
#                                    (2.28); no kedro-viz unless --with viz, no dev extra unless
#                                    --dev; prints the count, the MiB and whether they fit
#   scripts/offline_wheels.sh download [DIR]
#                                    every dependency (dev extra and kedro-viz included), for
#                                    a venv made from DIR alone (check, install)
#   scripts/offline_wheels.sh check [DIR]      a clean venv installs the project from DIR
#                                              alone (--no-index): the list is complete
#   scripts/offline_wheels.sh install [DIR]    on the GPU machine: .venv (with the machine's
#                                              torch: --system-site-packages) from DIR alone
#   scripts/offline_wheels.sh install --target TARGET [DIR]
#                                              where no venv can be made: every wheel of DIR
#                                              into TARGET (--no-deps); prints the PYTHONPATH
#
# DIR is .whl/ by default. scripts/gpu_check.sh OUT --bundle DIR installs a bundle itself.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
shift || true
py=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
if [ "$cmd" = download ]; then
  exec "$py" scripts/offline_wheels.py "$@"
fi
target=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target=$(realpath -m "${2:?--target needs a folder}"); shift 2 ;;
    -*) echo "offline_wheels: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
dir=$(realpath -m "${1:-.whl}")

case "$cmd" in
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
  "$tmp/venv/bin/python" -c "import kedro, kedro_mlflow, mlflow, pytest, connect_zero_pipeline.core.search.compiled; print('complete: kedro', kedro.__version__, 'mlflow', mlflow.__version__)"
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

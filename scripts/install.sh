#!/usr/bin/env bash
# make setup's install (Makefile: $(VENV)/.installed): the venv, torch, then the project.
#
#   VENV=.venv PYTHON=python3 TORCH_VERSION=2.13.0 TORCH_INDEX=<url> EXTRAS=dev,ray,book scripts/install.sh
#
# With uv (pip-installed into the venv first: about a minute from a bare clone), else with
# pip (one line says so; slower: 96 s against 47 s on a 2-core AVX-512 host). Either way:
# - torch first, with no dependencies of its own resolved again: a wheel already on this
#   machine (pip's find-links configuration) needs no download, else TORCH_INDEX's (the CPU
#   build on a machine without an NVIDIA GPU: a few hundred MB, not several GB of CUDA);
# - then the project, editable, with EXTRAS; the torch installed satisfies its range, so
#   nothing replaces it;
# - every module compiled to bytecode on every core: with PYTHONDONTWRITEBYTECODE set, as on
#   this project's machines, every process would otherwise compile what it imports again
#   (torch, MLflow, Kedro and pandas: 6.8 s against 2.9 s a process, measured on 2 cores).
set -euo pipefail
venv=${VENV:-.venv}
python=${PYTHON:-python3}
torch_version=${TORCH_VERSION:?TORCH_VERSION}
torch_index=${TORCH_INDEX:?TORCH_INDEX}
extras=${EXTRAS:-dev,ray,book}
bin=$venv/bin
pip=("$bin/python" -m pip)

start=$SECONDS
say() { echo "install: $*"; }  # a line a step: a bare clone's set-up takes about a minute
# `step WHAT CMD...`: say WHAT, run CMD, and say it again every 15 s while it runs (pip and
# uv are silent here: --quiet), so that a long download never reads as a hang.
step() {
  local what=$1 began=$SECONDS status=0 ticker
  shift
  say "$what"
  ( while sleep 15; do say "$what: $((SECONDS - began)) s so far"; done ) &
  ticker=$!
  "$@" || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$status"
}

test -x "$bin/python" || step "a virtual environment in $venv" "$python" -m venv "$venv"
say "torch $torch_version, then the project with [$extras] (about a minute from a bare clone)"
quietly() { "$@" >/dev/null 2>&1; }
if step "uv, the installer" quietly "${pip[@]}" install --quiet uv && [ -x "$bin/uv" ]; then
  uv=("$bin/uv" pip install --quiet --python "$bin/python" --compile-bytecode)
  wheels=$(mktemp -d)
  trap 'rm -rf "$wheels"' EXIT
  # pip finds a local torch wheel through its own configuration; uv reads none of it.
  if "${pip[@]}" download --quiet --no-deps --no-index "torch==$torch_version" \
       --dest "$wheels" >/dev/null 2>&1; then
    step "torch $torch_version (a wheel on this machine)" "${uv[@]}" --no-deps "$wheels"/torch-*.whl
  else
    step "torch $torch_version from $torch_index" \
      "${uv[@]}" --no-deps "torch==$torch_version" --index-url "$torch_index"
  fi
  step "the project and its dependencies" "${uv[@]}" -e ".[$extras]"
else
  echo "install: uv could not be installed here; installing with pip (slower)"
  step "torch $torch_version" "${pip[@]}" install --quiet --no-compile --no-deps --no-index \
      "torch==$torch_version" 2>/dev/null \
    || step "torch $torch_version from $torch_index" "${pip[@]}" install --quiet --no-compile \
         --no-deps "torch==$torch_version" --index-url "$torch_index"
  step "the project and its dependencies" "${pip[@]}" install --quiet --no-compile -e ".[$extras]"
  # Files some packages ship that are not Python 3 fail to compile, as under pip: left as is.
  step "compiling the installed modules" quietly "$bin/python" -m compileall -q -j 0 \
    "$("$bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")" || true
fi
say "done in $((SECONDS - start)) s"

#!/usr/bin/env bash
# make setup's install (Makefile: $(VENV)/.installed): the venv, torch, then the project.
#
#   VENV=.venv PYTHON=python3 TORCH_VERSION=2.13.0 TORCH_INDEX=<url> EXTRAS=dev,ray,book scripts/install.sh
#
# With uv (pip-installed into the venv first), else with pip (one line says so; slower: 50 s
# against 10 s on a 2-core AVX-512 host whose package caches are warm). Either way:
# - torch first, with no dependencies of its own resolved again: a wheel already on this
#   machine (pip's find-links configuration) needs no download, else TORCH_INDEX's (the CPU
#   build on a machine without an NVIDIA GPU: a few hundred MB, not several GB of CUDA);
# - then the project, editable, with EXTRAS; the torch installed satisfies its range, so
#   nothing replaces it;
# - nothing compiled to bytecode here: Python writes a module's bytecode when a process first
#   imports it, and the Makefile's targets let it do so even where PYTHONDONTWRITEBYTECODE is
#   set, as on this project's machines (Makefile: unexport). Compiling all 22,700 installed
#   modules took 22 s of a bare clone's 36 s set-up; the suite imports about 7,900 of them
#   (`make test` from a bare clone 5 min 44 s against 6 min 3 s, the same hour).
set -euo pipefail
venv=${VENV:-.venv}
python=${PYTHON:-python3}
torch_version=${TORCH_VERSION:?TORCH_VERSION}
torch_index=${TORCH_INDEX:?TORCH_INDEX}
extras=${EXTRAS:-dev,ray,book}
bin=$venv/bin
pip=("$bin/python" -m pip)

start=$SECONDS
say() { echo "install: $*"; }  # a line a step: a download can take minutes
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
say "torch $torch_version, then the project with [$extras]"
quietly() { "$@" >/dev/null 2>&1; }
if step "uv, the installer" quietly "${pip[@]}" install --quiet uv && [ -x "$bin/uv" ]; then
  uv=("$bin/uv" pip install --quiet --python "$bin/python")
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
fi
say "done in $((SECONDS - start)) s"

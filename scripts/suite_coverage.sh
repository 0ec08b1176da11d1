#!/usr/bin/env bash
# Line coverage of src/ by the test suite, subprocesses included (kedro runs, workers, the
# GPU check's rehearsal): coverage.py's `patch = subprocess` starts measuring in every
# Python process the suite starts (a process stopped by SIGTERM, such as Ray's workers at
# `ray stop`, saves its data too); the data files are combined, paths mapped back to src/.
#
#   scripts/suite_coverage.sh [pytest arguments]     (default: make test's)
#
# Needs coverage.py >= 7.10 in the environment (pip install coverage: a measurement, not a
# dependency of the project). Prints coverage's report's last line and writes the whole
# report to coverage_report.txt here. About 1.5x the suite's time.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" -c "import coverage, sys; sys.exit(tuple(map(int, coverage.__version__.split('.')[:2])) < (7, 10))" \
  || { echo "suite_coverage: needs coverage.py >= 7.10: $PY -m pip install 'coverage>=7.10'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/coveragerc" <<EOF
[run]
parallel = true
patch = subprocess
sigterm = true
source_pkgs = connect_zero_pipeline
data_file = $work/.coverage
[paths]
source =
    $PWD/src/connect_zero_pipeline
    */src/connect_zero_pipeline
    */site-packages/connect_zero_pipeline
EOF
if [ $# -eq 0 ]; then
  set -- -n "$(( $(nproc) + 1 ))" --dist loadfile --no-loadscope-reorder -q
fi
status=0
"$PY" -m coverage run --rcfile="$work/coveragerc" -m pytest "$@" || status=$?
"$PY" -m coverage combine --quiet --rcfile="$work/coveragerc"
"$PY" -m coverage report -m --rcfile="$work/coveragerc" > coverage_report.txt
tail -1 coverage_report.txt
exit "$status"

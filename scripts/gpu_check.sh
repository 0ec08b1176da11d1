#!/usr/bin/env bash
# The first look at a machine with an NVIDIA GPU, in one command, inside a budget (docs/gpu.md):
#   scripts/gpu_check.sh OUT [--budget 540]   # seconds in all (default 540: 9 minutes)
#   scripts/gpu_check.sh OUT --tiny           # every step at smoke sizes, on any device
# Writes OUT/results.jsonl (a JSON line a step, as it ends) and OUT/summary.md; exit 1 if a step failed.
# Needs the project installed: make setup, or offline scripts/offline_wheels.sh install.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
if [ $# -lt 1 ]; then sed -n '2,6p' "$0"; exit 2; fi
if ! "$py" -c "import connect_zero_pipeline, kedro, mlflow" 2>/dev/null; then
  echo "gpu_check: the project is not installed for $py (make setup, or scripts/offline_wheels.sh install)" >&2
  exit 2
fi
export DO_NOT_TRACK=1 KEDRO_DISABLE_TELEMETRY=1
exec "$py" scripts/gpu_check.py "$@"

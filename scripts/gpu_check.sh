#!/usr/bin/env bash
# The first look at a machine with an NVIDIA GPU, in one command, inside a budget (docs/gpu.md):
#   scripts/gpu_check.sh OUT [--budget 540]               # the project installed (make setup)
#   scripts/gpu_check.sh OUT --bundle .whl [--budget 540]  # offline: the bundle installed first
#   scripts/gpu_check.sh --plan [--bundle .whl]            # the steps and their caps; runs nothing
#   scripts/gpu_check.sh OUT --tiny                        # every step at smoke sizes, any device
# Writes OUT/results.jsonl (a JSON line a step, as it ends) and OUT/summary.md; exit 1 if a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
if [ $# -lt 1 ]; then sed -n '2,7p' "$0"; exit 2; fi
exec "$py" scripts/gpu_check.py "$@"

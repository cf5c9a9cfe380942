# rlaudit: `make report` builds the investigation report, `make test` proves it works.
# Both set up the virtual environment first (nothing needed but Python 3.11).

.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
EXTRAS := workbench,sb3,ray,dev

BASELINE ?= builtin:reference
CANDIDATE ?= builtin:regressed
PAIR ?=
PROFILE ?= standard
JOBS ?= 2
TEST_JOBS ?= 2
OUT ?= reports
FRESH ?=
EXECUTOR ?= local
RAY_ADDR ?= auto
METRIC ?=
VARIANTS ?=
CHANGES ?= auto
FAIL_ON ?=
STALL_TIMEOUT ?=
CPU_LIMIT ?=
RETRY_FAILED ?=

# Prefer the venv's kernelspec over any user-level "python3" kernel, so papermill and nbval run the
# notebooks with this environment's interpreter.
export JUPYTER_PREFER_ENV_PATH := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help setup report test test-fast test-unit test-notebooks lab lint format bench clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2}'
	@echo "  variables: BASELINE=$(BASELINE) CANDIDATE=$(CANDIDATE) PAIR=$(PAIR) PROFILE=$(PROFILE) JOBS=$(JOBS)"
	@echo "             METRIC=NAME[:lower] (primary metric) VARIANTS='name=spec, ...' (extra attribution arms)"
	@echo "             CHANGES=auto|off (culprit commit and hunk search between two versions of one source)"
	@echo "             FRESH=1 (recompute) EXECUTOR=local|ray RAY_ADDR=auto|host:port|ray://host:port (docs/RAY.md)"
	@echo "             FAIL_ON=none|error|confirmed|suspect (what makes the exit code non-zero; rlaudit report --help)"
	@echo "             STALL_TIMEOUT=S (stop a probe after S s without progress; 300) CPU_LIMIT=S (its CPU-seconds;"
	@echo "             the profile's) RETRY_FAILED=1 (run again the probes remembered as failed)"
	@echo "             LAB_ARGS='--no-browser --port 8890' (make lab: passed on to jupyter lab)"
	@echo "             TEST_JOBS=2 (make test's pytest workers; 0 runs every test in one process)"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rlaudit needs Python 3.11 or newer; set PYTHON=/path/to/python3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (rlaudit)" > /dev/null
	touch $(STAMP)

setup: $(STAMP) ## create .venv and install rlaudit with everything it needs (re-runs when pyproject changes)

report: setup ## run every audit on BASELINE vs CANDIDATE and render reports/index.html
	$(BIN)/rlaudit report --baseline "$(BASELINE)" --candidate "$(CANDIDATE)" $(if $(PAIR),--pair "$(PAIR)") \
		$(if $(METRIC),--metric "$(METRIC)") $(if $(VARIANTS),--variants "$(VARIANTS)") --changes $(CHANGES) \
		--profile $(PROFILE) -j $(JOBS) --out $(OUT) $(if $(FRESH),--fresh) \
		--executor $(EXECUTOR) --ray-address "$(RAY_ADDR)" $(if $(FAIL_ON),--fail-on $(FAIL_ON)) \
		$(if $(RETRY_FAILED),--retry-failed) $(if $(STALL_TIMEOUT),--stall-timeout $(STALL_TIMEOUT)) \
		$(if $(CPU_LIMIT),--cpu-limit $(CPU_LIMIT))

TEST_ENV := RLAUDIT_PROFILE=smoke RLAUDIT_REPORTS=$(CURDIR)/.pytest-reports RLAUDIT_CACHE=$(CURDIR)/.pytest-cache \
	RLAUDIT_TEST_CACHE=$(CURDIR)/.pytest-cache

test: setup ## unit tests, the fault-detection matrix, and every notebook under nbval (smoke profile)
	$(TEST_ENV) $(BIN)/python -m pytest tests notebooks --nbval-lax -p no:cacheprovider -q --durations=40 \
		-n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder

test-fast: setup ## the fast loop (under 2 min on 2 cores): every test that starts no worker, kernel, report or Ray
	$(TEST_ENV) $(BIN)/python -m pytest tests -m "not workbench and not expensive" -p no:cacheprovider -q \
		--durations=10 -n $(TEST_JOBS)

test-unit: test-fast ## the same as test-fast (tests marked workbench run in make test)

test-notebooks: setup ## notebooks only, under nbval at the smoke profile
	$(TEST_ENV) $(BIN)/python -m pytest notebooks --nbval-lax -p no:cacheprovider -q

lab: setup ## open the notebooks in JupyterLab, every one set to BASELINE vs CANDIDATE (or PAIR), PROFILE, METRIC
	$(BIN)/rlaudit lab --launched-by "make lab" --baseline "$(BASELINE)" --candidate "$(CANDIDATE)" $(if $(PAIR),--pair "$(PAIR)") \
		$(if $(METRIC),--metric "$(METRIC)") $(if $(VARIANTS),--variants "$(VARIANTS)") --changes $(CHANGES) \
		--profile $(PROFILE) $(if $(FRESH),--fresh) $(if $(STALL_TIMEOUT),--stall-timeout $(STALL_TIMEOUT)) \
		$(if $(CPU_LIMIT),--cpu-limit $(CPU_LIMIT)) $(if $(LAB_ARGS),-- $(LAB_ARGS))

lint: setup ## ruff lint and format check
	$(BIN)/ruff check lib tests notebooks
	$(BIN)/ruff format --check lib tests notebooks

format: setup ## ruff format and autofix (rewrites files)
	$(BIN)/ruff format lib tests notebooks
	$(BIN)/ruff check --fix lib tests notebooks

bench: setup ## print the benchmark figures (env, trainer, recorder, sb3)
	for what in env trainer recorder sb3; do $(BIN)/rlaudit bench $$what; done

clean: ## remove caches, rendered reports and the venv (never touches code or notebooks)
	rm -rf data/cache data/runs .pytest-reports .pytest-cache .pytest_cache .ruff_cache $(VENV)
	find reports -mindepth 1 ! -name README.md -exec rm -rf {} +
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

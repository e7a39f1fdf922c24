# Quickstart targets. `make run` and `make test` each set up .venv on first use.
# torch is installed first, pinned to a version whose CPU build (2.13.0+cpu) the package index has: a bare
# `torch` requirement would otherwise pull the multi-GB CUDA build through sentence-transformers.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0
export EYT_DATA_DIR ?= $(CURDIR)/data

.PHONY: install run test test-fast test-unit lint typecheck check dev view clean-data

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# pip through eyt_dagster/ops/install_progress.py: one line per package as pip takes it up, and a line when the
# unpacking starts and ends (a first install takes a few minutes); an install that is up to date prints nothing.
INSTALL := $(BIN)/python eyt_dagster/ops/install_progress.py --disable-pip-version-check

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	@echo "installing into $(VENV): CPU-only $(TORCH), then the project and its test tools (a few minutes the first time)"
	$(INSTALL) "$(TORCH)"
	$(INSTALL) -e ".[test]"
	touch $@

install: $(VENV)/.installed

run: install  ## materialise the whole EYT graph on the default (embedded-baseline) slate
	HF_HUB_OFFLINE=1 $(BIN)/eyt run

test: install  ## run the test suite (what CI runs)
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q

test-fast: install  ## the suite without the tests marked slow (CLI subprocesses, the browser UI)
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q -m "not slow"

test-unit: install  ## the unit tier (no Dagster run, no CLI, no browser); the others: pytest -m materialisation|cli|browser
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q -m unit

lint: install  ## ruff: lint and formatting (settings: [tool.ruff] in pyproject.toml); `ruff format .` fixes the format
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install  ## mypy over eyt_dagster, assets and resources (settings: [tool.mypy] in pyproject.toml)
	$(BIN)/mypy --config-file pyproject.toml

check: lint typecheck test  ## what CI runs: lint, types, the whole suite

dev: install  ## the Dagster UI on this project's instance, http://127.0.0.1:3000
	$(BIN)/eyt dev

view: install  ## the read-only web explorer over the warehouse (a free port; the URL is printed)
	$(BIN)/eyt view

clean-data:  ## delete the warehouse, call cache and Dagster instance under $(EYT_DATA_DIR)
	rm -rf "$(EYT_DATA_DIR)"

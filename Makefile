# The two newcomer commands: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch 2.13.0 is the CPU build these machines hold on disk; an unpinned torch would pull CUDA.
TORCH ?= torch==2.13.0
CORES ?= 2
SNAKEMAKE := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake
DEMO_CONFIG := resources/demo/config.yaml

.PHONY: help setup system-deps demo test test-fast lint docs clean-demo

help:
	@echo "make demo       the whole DAG on the embedded demo data (about 5 minutes on 2 cores)"
	@echo "make test       lint and every test, as CI runs them (20 to 33 minutes on 2 cores)"
	@echo "make test-fast  the developer's loop: unit tests without workflow runs, builds or kills (under two minutes)"
	@echo "make lint       ruff, snakefmt, the package's layers (lint-imports) and snakemake --lint"
	@echo "make docs       regenerate the tables of docs/ from the rules and the schema"
	@echo "make clean-demo remove results/, logs/ and .snakemake/ of a demo run"

# The installers compile what they install (uv when told to), not the editable package:
# compile its sources here, or where PYTHONDONTWRITEBYTECODE is set (as in many containers,
# these machines among them) every process compiles each xlsent module it imports anew
# (0.07 s a Snakemake start).
setup: $(VENV)/.installed
	@$(BIN)/python -m compileall -q src

# pip takes torch (only pip finds the CPU build on these machines' disk); uv the rest, with
# torch installed already: from a fresh venv on 2 cores the same packages took 20.5 s with
# uv (bytecode compiled, as pip does) against 48.7 s with pip.
UV ?= uv>=0.5,<1
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH)" "$(UV)"
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[all,test]"
	touch $@

# One thread a job: on a small machine a job of more threads waits until every core is
# free, which a stream of one-thread jobs never leaves (the demo's jobs take seconds).
demo: setup
	$(SNAKEMAKE) --cores $(CORES) --max-threads 1 --configfile $(DEMO_CONFIG)
	@echo "results/tables/tatoeba.csv:"
	@cat results/tables/tatoeba.md

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(SNAKEMAKE) --lint
	$(SNAKEMAKE) --lint --configfile $(DEMO_CONFIG)

# Debian packages some tests read or build with (FreeDict en-de and the dictionaries the configs
# name, cmake, g++, patch), when missing.
system-deps:
	bash tests/data/install_system_deps.sh

# Pytest workers (tests/conftest.py: which modules share one). The workflow tests spend much
# of their time waiting on processes (Snakemake, Slurm, the kills), which another worker's
# tests fill: on 2 cores, from a fresh clone at one head, `make test` took 1,728 s on two
# workers (the test processes using 1.39 cores on average) and 1,433 s on three (1.78); at a
# later head pytest took 1,335 s on three and 1,385 s on four (1.81 cores: the cores are full).
# The unit tests wait on nothing: `make test-fast` took 97 s on two and 113 s on three.
# Every test's duration goes to logs/tests.xml (JUnit XML); `tests/durations.py` lists the
# slowest, or compares two runs' side by side.
TEST_WORKERS ?= 3
FAST_WORKERS ?= 2
test: setup system-deps lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
		--junitxml=logs/tests.xml

# Markers are declared in pyproject.toml: `workflow` runs Snakemake, `slow` builds or kills.
test-fast: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -n $(FAST_WORKERS) --dist loadgroup --no-loadscope-reorder \
		-m "not workflow and not cluster and not slow"

docs: setup
	$(BIN)/python -m xlsent.docs

clean-demo:
	rm -rf results logs .snakemake

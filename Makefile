# The two commands of the README, plus a few helpers.
#   make run    run the host here with demo data (prints URL and admin token)
#   make test   run the whole test suite (what CI runs)
#
# `run` installs only what the host needs (the [run] extra); `test` and the other
# helpers install the development tools on top ([dev]). Each has its own stamp.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
DATA   ?= var/data

.PHONY: run test test-fast bench system-deps clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[run]"
	touch $@

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[dev]"
	touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	WIKIMEM_DATA=$${WIKIMEM_DATA:-$(DATA)} WIKIMEM_EMBEDDER=$${WIKIMEM_EMBEDDER-local} $(VENV)/bin/wikimem serve --demo

system-deps:
	.ci/system-deps

test: $(DEV_STAMP)
	.ci/system-deps --if-root
	$(VENV)/bin/pytest -n 2 -q

test-fast: $(DEV_STAMP)
	$(VENV)/bin/pytest -n 2 -q -m "not slow and not browser"

bench: $(DEV_STAMP)
	$(PY) bench/retrieval.py
	$(PY) bench/vectors.py
	$(PY) bench/commits.py
	$(PY) bench/api.py
	$(PY) bench/slow_llm.py
	$(PY) bench/quality.py
	$(PY) bench/cluster.py
	$(PY) bench/bulk.py
	$(PY) bench/jobs.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache tests/screenshots

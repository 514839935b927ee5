# kbroker — the two commands that matter: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP_BASE := $(VENV)/.installed-base
STAMP_ALL := $(VENV)/.installed-all
PORT ?= 9092
HOST ?= 127.0.0.1
DATA_DIR ?= ./data
METRICS_PORT ?= 9464
CONSOLE_PORT ?= 9080

.PHONY: run test test-container install install-all compile lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel

$(STAMP_BASE): pyproject.toml setup.py protocol/_crecords.pyx | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(STAMP_ALL): pyproject.toml setup.py protocol/_crecords.pyx | $(PY)
	$(PY) -m pip install --quiet -e ".[dev,spark]"
	touch $@ $(STAMP_BASE)

install: $(STAMP_BASE)
install-all: $(STAMP_ALL)

## compile: (re)compile the request path's modules whose source changed since the install (setup.py);
## a module not compiled for its current source runs as Python
compile: $(STAMP_BASE)
	$(PY) setup.py --quiet build_ext --inplace

## run: start the broker with the embedded single-node defaults (CONSOLE_PORT=none: no web console)
run: $(STAMP_BASE)
	@if [ "$(CONSOLE_PORT)" != none ]; then echo "kbroker console: http://127.0.0.1:$(CONSOLE_PORT)/ (the broker logs where it listens)"; fi
	$(PY) -m broker --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR) --metrics-port $(METRICS_PORT) \
		--console-port $(CONSOLE_PORT)

## test: install everything into .venv and run the whole suite, the container tests last
test: $(STAMP_ALL) compile
	bash tests/setup_tools.sh
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -p no:cacheprovider --ignore=tests/container
	$(PY) -m pytest -q -p no:cacheprovider tests/container

## test-container: build the image with podman and run it and the compose stacks (tests/container)
test-container: $(STAMP_ALL)
	bash tests/setup_tools.sh
	$(PY) -m pytest -q -p no:cacheprovider tests/container

lint: $(STAMP_ALL)
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports

bench: $(STAMP_ALL)
	$(PY) benchmarks/protocol_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
	find protocol broker -name '*.kbc*.so' -delete

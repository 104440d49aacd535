# tensorwire: `make demo` runs the main job, `make test` runs every test.
# Both create the environment (.venv in the checkout) when it is missing.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
# pip run by maturin: errors only (its "Ignoring ray: markers ..." lines were noise in `make demo`)
export PIP_QUIET := 2

.PHONY: help demo test test-rust test-python lint bench build build-test system env clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "maturin>=1.5,<2"

env: $(PY)  ## create .venv with the build tool

build: $(PY)  ## build the Rust core into .venv (release), with plotly for `tensorwire report`
	maturin develop --release -q
	$(PY) -m pip install -q "plotly>=5"

build-test: $(PY)  ## build with everything the tests use: pytest, torch (CPU), plotly, pyarrow
	maturin develop --release -q --extras test,torch,report

system:  ## system packages for the testbed (iproute2) and the report test (chromium), when root
	sh scripts/setup-system.sh
	sh scripts/setup-chromium.sh

demo: build  ## compare strategies on the default scenario and on a GPU cluster (64 H100, PyTorch DDP vs FSDP)
	tensorwire compare
	tensorwire compare --model llama3_8b --gpu h100 -n 64 --topology rail:node=dgx-h100

test: test-rust test-python lint  ## every test: Rust (cargo) and Python (pytest), then the lint checks (make lint)

test-rust:  ## Rust unit and property tests of the core
	cargo test -p tensorwire-core

test-python: build-test system  ## Python tests (unit, docs, distributed, testbed) and the stub check
	$(PY) -m pytest -q
	$(PY) -m mypy.stubtest tensorwire._core --allowlist tests/stubtest-allowlist.txt

lint: build-test  ## clippy, rustfmt check, rustdoc links, mypy --strict, ruff check and format check (no root needed)
	cargo clippy -p tensorwire-core -p tensorwire-py --all-targets -- -D warnings
	cargo fmt --all --check
	RUSTDOCFLAGS="-D warnings" cargo doc -q -p tensorwire-core --no-deps
	$(PY) -m mypy
	$(PY) -m ruff check python tests benchmarks scripts examples
	$(PY) -m ruff format --check python tests benchmarks scripts examples

bench: build  ## benchmarks; results go into docs/benchmarks.md by hand
	$(PY) benchmarks/simulator.py

clean:  ## remove build outputs and the environment
	rm -rf target $(VENV) .pytest_cache .hypothesis

.PHONY: golden-check golden-record

golden-check: build  ## what a user sees is byte-identical to tests/golden/ (docs/benchmarks.md)
	$(PY) benchmarks/golden.py --check

golden-record: build  ## re-record tests/golden/ after an intended change of output
	$(PY) benchmarks/golden.py --record

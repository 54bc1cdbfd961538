# Two commands: `make train` and `make test`. Both install libtorch 2.13.0 on first use (into
# a per-user cache, never the repo), then build and run. `make CUDA=1 ...` uses the full CUDA
# wheel and links libtorch_cuda for GPU machines; `make MPI=1 ...` builds with the `mpi`
# feature (installing Debian's OpenMPI when missing) for `mpirun -np N mocc train|sweep`.

SHELL := /bin/bash
TORCH_VERSION := 2.13.0
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/mocc
CUDA ?= 0
MPI ?= 0
CARGO ?= cargo

ifeq ($(CUDA),1)
LIBTORCH_DIR := $(CACHE_DIR)/libtorch-$(TORCH_VERSION)-cuda
LIBTORCH_MODE := cuda
FEATURES := --features cuda
else
LIBTORCH_DIR := $(CACHE_DIR)/libtorch-$(TORCH_VERSION)
LIBTORCH_MODE := cpu
FEATURES :=
endif

ifeq ($(MPI),1)
FEATURES += --features mpi
MPI_DEPS := mpitools
else
MPI_DEPS :=
endif

# The MPI tests (2 ranks through mpirun) run where OpenMPI can be installed (root, as in CI) or
# is already there; elsewhere `make test` says it skips them.
MOCC_TEST_MPI ?= $(shell { [ "$$(id -u)" = 0 ] || command -v mpirun >/dev/null 2>&1; } && echo 1 || echo 0)
export LIBTORCH := $(LIBTORCH_DIR)/torch
# Python tools the tests use (TensorBoard, to read our event files back).
PYTOOLS_DIR := $(CACHE_DIR)/pytools
# The virtual environment the Python package is built and tested in (maturin, Gymnasium,
# PettingZoo, Stable-Baselines3 and PyPI's torch for the examples).
PYTHON_ENV ?= $(CACHE_DIR)/python-env

# The real-network tests (mocc-net) run as root; there a missing capability fails them
# instead of skipping them (CI runs as root).
MOCC_REQUIRE_NET ?= $(shell [ "$$(id -u)" = 0 ] && echo 1 || echo 0)

# Benchmark workload (Aurora's default scenario, 50 envs x 400 MIs, constant action 0).
BENCH_SCENARIO ?= configs/aurora-env.yaml
BENCH_STEPS ?= 200000

.PHONY: all libtorch pytools nettools mpitools python-env python build train test test-mpi \
	test-python bench bench-env bench-python fmt clippy

all: build

libtorch: $(LIBTORCH_DIR)/.installed

$(LIBTORCH_DIR)/.installed:
	scripts/install-libtorch.sh "$(LIBTORCH_DIR)" $(LIBTORCH_MODE)

# The script returns at once when the package list is already installed.
pytools:
	scripts/install-pytools.sh "$(PYTOOLS_DIR)"

nettools:
	scripts/install-nettools.sh

mpitools:
	scripts/install-mpi.sh

python-env:
	scripts/install-python-env.sh "$(PYTHON_ENV)"

# The Python package `mocc` (python/), built optimized and installed into $(PYTHON_ENV):
# `$(PYTHON_ENV)/bin/python -c "import mocc"`. Into an environment of your own:
# `pip install ./python`.
python: python-env
	scripts/build-python.sh "$(PYTHON_ENV)" release

build: libtorch $(MPI_DEPS)
	$(CARGO) build --release $(FEATURES)

# Trains the shipped shared-link model, checkpoints/mocc-pair, from its recipe (about 5 min on
# 2 cores; docs/recipes.md) into runs/mocc-pair-s1-<unix time>; `make train CONFIG=FILE` trains
# another recipe or config.
CONFIG ?= configs/recipes/mocc-pair.yaml
train: build
	./target/release/mocc train $(CONFIG)

# Simulator throughput, one and two threads.
bench-env: build
	./target/release/mocc bench env --scenario $(BENCH_SCENARIO) --envs 50 --threads 1 --steps $(BENCH_STEPS)
	./target/release/mocc bench env --scenario $(BENCH_SCENARIO) --envs 50 --threads 2 --steps $(BENCH_STEPS)

# Where the MPI tests run, `make test` builds the `mpi` feature into its one workspace build
# (tests/mpi.rs runs with the others) instead of building the graph again for them.
ifeq ($(MOCC_TEST_MPI),1)
TEST_FEATURES := $(if $(filter 1,$(MPI)),,--features mpi)
TEST_DEPS := mpitools
else
TEST_FEATURES :=
TEST_DEPS :=
endif

# Every test of the workspace, optimized, with debug assertions (profile `ci`), built once:
# the MPI tests inside the workspace's build, the Python package by maturin from the same
# compiled dependencies (python/Cargo.toml unifies their features), its tests on the `mocc`
# binary that build made.
test: libtorch pytools nettools python-env $(TEST_DEPS)
	MOCC_PYTOOLS="$(PYTOOLS_DIR)" MOCC_REQUIRE_TENSORBOARD=1 MOCC_REQUIRE_NOTEBOOKS=1 \
		MOCC_REQUIRE_NET=$(MOCC_REQUIRE_NET) MOCC_REQUIRE_ROOT=$(MOCC_REQUIRE_NET) \
		$(CARGO) test --profile ci --workspace $(FEATURES) $(TEST_FEATURES)
ifneq ($(MOCC_TEST_MPI),1)
	@echo "test-mpi: skipped (OpenMPI is missing and installing it needs root: scripts/install-mpi.sh)"
endif
	scripts/build-python.sh "$(PYTHON_ENV)" ci
	scripts/test-python.sh "$(PYTHON_ENV)" target/ci/mocc

# The Python package: built (profile ci, whose artifacts `cargo test` made), its pytest suite,
# the SB3 and CleanRL-style examples with their learning checks, the notebook.
test-python: python-env
	scripts/build-python.sh "$(PYTHON_ENV)" ci
	$(CARGO) build --profile ci --bin mocc
	scripts/test-python.sh "$(PYTHON_ENV)" target/ci/mocc

# Data-parallel training on 2 ranks: equivalence with one process, resume, a killed rank.
test-mpi: libtorch
ifeq ($(MOCC_TEST_MPI),1)
	scripts/install-mpi.sh
	$(CARGO) test --profile ci -p mocc --features mpi --test mpi
else
	@echo "test-mpi: skipped (OpenMPI is missing and installing it needs root: scripts/install-mpi.sh)"
endif

# VectorEnv.step from Python against `mocc bench env`, same scenario, envs and core.
bench-python: python build
	scripts/bench-python.sh "$(PYTHON_ENV)" ./target/release/mocc $(BENCH_SCENARIO)

bench: libtorch
	$(CARGO) bench -p mocc-gym --bench sim
	$(CARGO) bench -p mocc-policy --bench controller
	$(CARGO) bench -p mocc-agents --bench update

fmt:
	$(CARGO) fmt --all

clippy: libtorch
	$(CARGO) clippy --release --workspace --all-targets $(FEATURES)

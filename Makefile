# Thin wrapper over CMake. `make demo` and `make test` install what is missing first
# (scripts/deps.sh), so both work on a fresh Debian 12 machine as root.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DATTN_WERROR=ON
endif
ATTN := $(BUILD_DIR)/bin/attn

.PHONY: all deps build demo-build demo test test-sanitize fuzz clean

all: build

deps:
	@bash scripts/deps.sh

# The whole build asks for the Python module (ON, not the AUTO default): scripts/deps.sh has just
# installed pybind11, so a module that cannot be built stops here instead of shrinking the suite.
build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DATTN_BUILD_PYTHON=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only what the demo runs: the build's packages (scripts/deps.sh demo) and the CLI's target, so
# that a fresh machine shows its first result after one compile; `make build` and `make test`
# install and build the rest (the tests, the Python module, attn-mpi) in the same tree.
demo-build:
	@bash scripts/deps.sh demo
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target attn_cli

# The main job on the embedded default vectors: the seeds' walkthrough for one sentence, ending
# in its contextual embeddings C, then "bank" in two sentences: its static vector, the
# parameter-free attention and the built-in context model side by side; last, the built-in
# language model continues a sentence.
demo: demo-build
	@echo '$$ attn explain "money bank grows"'
	@$(ATTN) explain "money bank grows"
	@echo
	@echo '$$ attn neighbors --model builtin --word bank "he sat on the bank of the river and watched the water"'
	@$(ATTN) neighbors --model builtin --word bank "he sat on the bank of the river and watched the water"
	@echo
	@echo '$$ attn neighbors --model builtin --word bank "she paid the money into her account at the bank"'
	@$(ATTN) neighbors --model builtin --word bank "she paid the money into her account at the bank"
	@echo
	@echo '$$ attn generate --seed 4 --top-k 40 --max-words 60 "The river"'
	@$(ATTN) generate --seed 4 --top-k 40 --max-words 60 "The river"

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_SANITIZE=ON -DATTN_BUILD_PYTHON=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer targets (fuzz/, clang) built in build-fuzz, each run for SECONDS seconds (JOBS=2: two
# at once). Without clang it says which packages to install.
SECONDS ?= 60
fuzz:
	bash fuzz/run.sh $(SECONDS)

clean:
	rm -rf $(BUILD_DIR) build-asan build-debug build-fuzz

# Thin wrapper over CMake: the README's two commands are `make run` and `make test`.
BUILD    ?= build
ASAN     ?= build-asan
FUZZ_SECONDS ?= 45
JOBS     ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DATTAIN_WERROR=ON
endif

.PHONY: all deps build run test test-asan test-fuzz test-cross format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The quick suite on this machine: attain next to OpenBLAS, table on stdout,
# results/latest.json (+ latest.html once the report exists).
run: build
	@mkdir -p results
	$(BUILD)/attain bench --suite quick --backend attain,openblas --out results/latest.json
	$(BUILD)/attain report results/latest.json -o results/latest.html

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	$(MAKE) test-asan
	$(MAKE) test-fuzz
	$(MAKE) test-cross

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (Debug, no benchmarks).
test-asan: deps
	cmake -S . -B $(ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DATTAIN_SANITIZE=ON \
	      -DATTAIN_BUILD_BENCH=OFF -DATTAIN_CUDA=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN) -j $(JOBS)
	cd $(ASAN) && ctest --output-on-failure -j $(JOBS) -L unit --timeout 900

# The libFuzzer targets (clang, ASan+UBSan), FUZZ_SECONDS each from the committed seeds.
test-fuzz: deps
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

# The tree cross-compiled for aarch64 (portable kernels) and its unit tests under qemu-user.
test-cross:
	CMAKE_FLAGS="$(CMAKE_FLAGS)" bash scripts/cross-aarch64.sh build-aarch64

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) $(ASAN) build-fuzz build-aarch64

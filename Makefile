# hetpool - top-level entry points.  CMake + Ninja do the building.
#
#   make deps      install the system packages (Debian 12, apt-get)
#   make           build into build/ (binaries in build/bin/)
#   make test      build and run the whole suite; ends with "N passed, N failed"
#   make run       the main job: analyse ResNet-50, predict it on five device types
#   make asan      the suite under AddressSanitizer + UBSan (build-asan/)
#   make fuzz      libFuzzer targets, each for FUZZ_SECONDS (build-fuzz/)
#   make bench     benchmarks (speed is measured here, never in tests)
#   make format    clang-format the C sources; make format-check checks them

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

DEPS = build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev \
	libjansson-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev \
	libdnnl-dev libgsl-dev libsqlite3-dev libmicrohttpd-dev \
	python3 python3-onnx python3-torch python3-torchvision \
	clang-format valgrind

.PHONY: all deps build test run asan fuzz bench format format-check clean

all: build

deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(DEPS)

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD)

test: build
	@tests/run.sh $(BUILD)

run: build
	$(BUILD)/bin/hetpool analyze data/models/resnet50.train.onnx --batch 32 --summary
	@for d in cpu t4 v100 a100 h100; do echo; \
		$(BUILD)/bin/hetpool predict data/models/resnet50.train.onnx --device $$d --batch 32 || exit 1; done
	@echo; echo "# ResNet-50, one ImageNet epoch at batch 256 within 1 hour, on the sample pool:"
	$(BUILD)/bin/hetpool recommend data/models/resnet50.train.onnx --pool data/pools/sample.json \
		--samples 1281167 --epochs 1 --batch 256 --deadline 1h --explain

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHP_SANITIZE=ON

asan: $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		tests/run.sh $(ASAN_BUILD)

$(FUZZ_BUILD)/build.ninja:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHP_FUZZ=ON

fuzz: $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD)
	@tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@benchmarks/run.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

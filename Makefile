# hetpool - top-level entry points.  CMake + Ninja do the building.
#
#   make deps      install every system package (Debian 12, apt-get)
#   make           build into build/ (binaries in build/bin/)
#   make test      build and run the whole suite; ends with "N passed, N failed"
#   make run       hetpoold in the foreground on 127.0.0.1:8080 (the sample pool
#                  and this host), after saying what to try; Ctrl-C stops it
#   make demo      the command-line walk-through: analyse ResNet-50, predict it on
#                  five device types, recommend on the sample pool; then train a
#                  small Fashion-MNIST CNN on this host through the local backend
#                  (RUN_SECONDS of training at most) and say where its results are
#   make asan      the suite under AddressSanitizer + UBSan (build-asan/)
#   make tsan      the thread tests under ThreadSanitizer (build-tsan/)
#   make fuzz      libFuzzer targets, each for FUZZ_SECONDS (build-fuzz/)
#   make bench     benchmarks (speed is measured here, never in tests)
#   make format    clang-format the C sources; make format-check checks them
#
# Each target first installs the packages it needs that are missing
# (tools/deps.sh: one dpkg-query when nothing is; HP_NO_DEPS=1 skips it),
# so on a fresh Debian 12 `make run` and `make test` are all it takes.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
RUN_SECONDS ?= 30

.PHONY: all deps deps-build deps-run deps-test deps-ci deps-bench build test run demo asan tsan fuzz bench \
	format format-check clean

all: build

deps:
	@tools/deps.sh all

deps-build deps-run deps-test deps-ci deps-bench:
	@tools/deps.sh $(@:deps-%=%)

$(BUILD)/build.ninja: | deps-build
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD)

test: deps-test build
	@tests/run.sh $(BUILD)

RUN_DIR ?= $(BUILD)/run
RUN_LISTEN ?= 127.0.0.1:8080

run: deps-run build
	@tools/run-daemon.sh $(BUILD) $(RUN_DIR) $(RUN_LISTEN)

demo: deps-run build
	$(BUILD)/bin/hetpool analyze data/models/resnet50.train.onnx --batch 32 --summary
	@for d in cpu t4 v100 a100 h100; do echo; \
		$(BUILD)/bin/hetpool predict data/models/resnet50.train.onnx --device $$d --batch 32 || exit 1; done
	@echo; echo "# ResNet-50, one ImageNet epoch at batch 256 within 1 hour, on the sample pool:"
	$(BUILD)/bin/hetpool recommend data/models/resnet50.train.onnx --pool data/pools/sample.json \
		--samples 1281167 --epochs 1 --batch 256 --deadline 1h --explain
	@echo; echo "# Train a small CNN on Fashion-MNIST here, through the local backend (a plan for"; \
		echo "# this host's own devices; at most $(RUN_SECONDS) s of training, then a test evaluation):"
	$(BUILD)/bin/hetpool run data/models/fmnist-cnn.json --data fashion-mnist --batch 64 \
		--epochs 1 --lr 0.05 --deadline 1h --max-seconds $(RUN_SECONDS) --wait

$(ASAN_BUILD)/build.ninja: | deps-ci
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHP_SANITIZE=ON

asan: deps-ci $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		tests/run.sh $(ASAN_BUILD)

# The tests that run threads: the recommender and the estimator from 8
# threads across a refit of the shared context, the context itself, the
# log sink, the deploy state file and submissions from many threads, the
# store's connections shared by 8 threads racing for devices and by the
# burst a SIGKILL interrupts (about 25 s).  A data race fails the run.
# (estimate_fit_same_for_any_thread_count is clean too but takes 75 s under
# TSan: run it by hand.)
TSAN_TESTS = threads_ ctx_ deploy_job_update_under_lock_loses_nothing \
	deploy_submit_from_many_threads store_allocation_race_ \
	store_sigkill_during_a_burst

$(TSAN_BUILD)/build.ninja: | deps-ci
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHP_TSAN=ON -DHP_CUDA=OFF

# Then hetpoold itself under TSan, driven by the integration tests that
# start no training (slow clients, the connection cap, many clients at
# once, 64 concurrent requests; 15 SIGKILLs mid-burst): a race reported
# by hetpoold fails the run (about 1 min).
TSAN_DAEMON_TESTS = limits crash

tsan: deps-ci $(TSAN_BUILD)/build.ninja
	cmake --build $(TSAN_BUILD) --target hp_unit hetpoold hetpool_cli hetpool_train
	@TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1 \
		$(TSAN_BUILD)/bin/hp_unit $(TSAN_TESTS) | tee $(TSAN_BUILD)/tsan.log; \
		grep -qE '^unit: [1-9][0-9]* passed, 0 failed$$' $(TSAN_BUILD)/tsan.log
	@rm -rf $(TSAN_BUILD)/tsan-daemon && mkdir -p $(TSAN_BUILD)/tsan-daemon && \
	for t in $(TSAN_DAEMON_TESTS); do \
		TSAN_OPTIONS=second_deadlock_stack=1:log_path=$(CURDIR)/$(TSAN_BUILD)/tsan-daemon/report \
		HP_CRASH_ROUNDS=15 HP_BIN=$(CURDIR)/$(TSAN_BUILD)/bin HP_ROOT=$(CURDIR) \
			python3 tests/integration/$$t.py || exit 1; \
	done; \
	if ls $(TSAN_BUILD)/tsan-daemon/report* >/dev/null 2>&1; then \
		cat $(TSAN_BUILD)/tsan-daemon/report*; echo "FAIL hetpoold under TSan"; exit 1; \
	else echo "hetpoold under TSan: no race reported"; fi

$(FUZZ_BUILD)/build.ninja: | deps-ci
	CC=clang cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHP_FUZZ=ON

fuzz: deps-ci $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD)
	@tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: deps-bench build
	@benchmarks/run.sh $(BUILD)

format: deps-ci
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check: deps-ci
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)

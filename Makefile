# tokentrace: `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.PHONY: help deps build dist typecheck lint test-deps test bench power-loss demo demo-pages screenshot run manifests oci clean leak-corpus leak-corpus-mutant

BIN := node_modules/.bin
ASC := $(BIN)/asc
FILTER_SRC := $(wildcard filter/*.ts filter/*/*.ts filter/transform/*.mjs) asconfig.json
CONTROL_PLANE_SRC := $(shell find control-plane/src -type f)
TESTS = $(shell find test -name '*.test.ts' -not -path '*/node_modules/*' | sort)

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# npm ci only when the lock file or the SDK patch changed; patch-package runs as postinstall.
node_modules/.installed: package.json package-lock.json $(wildcard patches/*.patch)
	@# npm ci empties node_modules first: through a symlink (a worktree sharing another checkout's) it would empty that checkout's.
	@if [ -L node_modules ]; then echo "node_modules is a symlink to $$(readlink node_modules): npm ci would empty it; run npm ci in this checkout without the link" >&2; exit 2; fi
	@echo "==> installing the pinned npm dependencies (npm ci; about a minute the first time)"
	@npm ci --no-audit --no-fund --loglevel=warn
	@touch $@

deps: node_modules/.installed ## install the pinned npm dependencies and patch the SDK

# The control plane as the image runs it: tsc's JavaScript beside its sources' package.json, so
# control-plane/node_modules (its own ajv) and the files it reads relative to itself resolve as from src/.
control-plane/dist/main.js: $(CONTROL_PLANE_SRC) control-plane/tsconfig.build.json tsconfig.json node_modules/.installed
	@echo "==> compiling the control plane: control-plane/dist/"
	@rm -rf control-plane/dist
	@$(BIN)/tsc -p control-plane/tsconfig.build.json
	@cp -R control-plane/src/dashboard/static control-plane/dist/dashboard/static

dist: control-plane/dist/main.js ## compile the control plane to JavaScript in control-plane/dist/ (what its image runs: node control-plane/dist/main.js)

# Binaryen's optimizer prints "Last converge was suboptimal." on success; that one line is dropped.
ASC_QUIET = 2> >(grep -v '^Last converge was suboptimal\.$$' >&2)

build/filter.wasm: $(FILTER_SRC) node_modules/.installed
	@echo "==> compiling the filter (release): $@"
	@$(ASC) filter/index.ts --target release $(ASC_QUIET)

build/filter.debug.wasm: $(FILTER_SRC) node_modules/.installed
	@echo "==> compiling the filter (debug): $@"
	@$(ASC) filter/index.ts --target debug $(ASC_QUIET)

# The content module: the same sources and root id, with content capture, redaction and the
# pseudonym key (filter/index-content.ts); the default module above carries none of that code.
build/filter-content.wasm: $(FILTER_SRC) node_modules/.installed
	@echo "==> compiling the filter with content capture (release): $@"
	@$(ASC) filter/index-content.ts --target release -o $@ $(ASC_QUIET)

build/noop.wasm: test/bench/noop-filter/index.ts asconfig.json node_modules/.installed
	@echo "==> compiling the no-op baseline filter for the benchmarks: $@"
	@$(ASC) test/bench/noop-filter/index.ts --target release -o build/noop.wasm $(ASC_QUIET)

# The filter's redaction engine alone, with the release options, for the redaction throughput bench.
build/redaction.wasm: test/bench/redaction-module/index.ts $(wildcard filter/content/*.ts) filter/bytes.ts asconfig.json node_modules/.installed
	@echo "==> compiling the redaction engine alone for the benchmarks: $@"
	@$(ASC) test/bench/redaction-module/index.ts --target release -o build/redaction.wasm $(ASC_QUIET)

build: build/filter.wasm build/filter.debug.wasm build/filter-content.wasm build/noop.wasm build/redaction.wasm ## compile the filter (release + debug), its content-capture module, the no-op baseline and the redaction engine for the benchmarks

typecheck: | node_modules/.installed ## TypeScript strict type-check
	@echo "==> type-checking (tsc --noEmit)"
	@$(BIN)/tsc --noEmit -p tsconfig.json

lint: | node_modules/.installed ## ESLint, zero warnings
	@echo "==> linting (eslint, zero warnings)"
	@$(BIN)/eslint --max-warnings 0 .

test-deps: ## install the Debian packages the tests run (prometheus, chromium, jq)
	@echo "==> checking the Debian packages the tests run (prometheus, chromium, jq)"
	@bash test/support/install-system-deps.sh

test: build control-plane/dist/main.js build/oci/index.json build/oci-content/index.json build/mutant/filter-content-margin0.wasm typecheck lint test-deps ## build, type-check, lint and run every test (what CI runs)
	@echo "==> running every test"
	@# Two files at a time: a third of the suite's time is demo stacks and Prometheus waiting on real timers.
	node --import tsx --test --test-concurrency=2 --test-timeout=300000 --test-reporter=spec $(TESTS)

bench: build ## run every benchmark and print one table
	@echo "==> running the benchmarks (BENCH_RUNS=$${BENCH_RUNS:-5} runs each; bars decided at the median)"
	@node --import tsx test/bench/run.ts

power-loss: | node_modules/.installed ## the larger power-loss run of both stores (POWER_LOSS_SEED, POWER_LOSS_SEEDS, POWER_LOSS_STORES)
	@echo "==> power-loss harness: every operation of longer workloads a crash point (test/power-loss/README.md)"
	@node --import tsx test/power-loss/run.ts

# The leak corpus at any size (the suite runs seed 21, 2,000 values, spread and sampled):
# every value through every protocol in both modes, at every chunk and cut position unless EXHAUSTIVE=0.
SEED ?= 21
COUNT ?= 2600
EXHAUSTIVE ?= 1
SPREAD ?= 0
leak-corpus: build/filter-content.wasm ## the leak corpus through the content module: make leak-corpus SEED=21 COUNT=2600 [EXHAUSTIVE=0] [SPREAD=1]; exits 1 on any leak
	@SEED=$(SEED) COUNT=$(COUNT) EXHAUSTIVE=$(EXHAUSTIVE) SPREAD=$(SPREAD) node --import tsx test/support/leak-corpus-main.ts

# The detection-margin mutant: the content module built with DETECTION_MARGIN = 0 must leak on the corpus.
build/mutant/filter-content-margin0.wasm: $(FILTER_SRC) node_modules/.installed
	@echo "==> compiling the zero-margin mutant of the content module: $@"
	@rm -rf build/mutant && mkdir -p build/mutant && cp -r filter build/mutant/filter
	@sed -i 's/^export const DETECTION_MARGIN: i32 = [0-9]*;/export const DETECTION_MARGIN: i32 = 0;/' build/mutant/filter/content/content.ts
	@grep -q '^export const DETECTION_MARGIN: i32 = 0;' build/mutant/filter/content/content.ts
	@$(ASC) build/mutant/filter/index-content.ts --target release -o $@ $(ASC_QUIET)

leak-corpus-mutant: build/mutant/filter-content-margin0.wasm ## the corpus must find leaks in a zero detection margin (exits 1 if it finds none)
	@WASM=build/mutant/filter-content-margin0.wasm SEED=$(SEED) COUNT=$(or $(MUTANT_COUNT),260) EXHAUSTIVE=0 SPREAD=1 EXPECT_LEAKS=1 node --import tsx test/support/leak-corpus-main.ts

demo: build/filter.wasm ## the whole local stack on 127.0.0.1: control plane + dashboard, filter in a local proxy, simulated LLM server and GPUs, pipeline, load
	@echo "==> starting the demo (TOKENTRACE_DEMO_SCENARIO=normal|gpu-saturated|slow-model|kv-cache-pressure|gpu-starved|gpu-thermal|gpu-straggler)"
	@node --import tsx test/demo/main.ts

# make test checks one scenario's page (kv-cache-pressure); each needs its own stack for a minute or more.
demo-pages: build/filter.wasm test-deps ## every demo scenario's story and alert on the dashboard, in headless Chromium (4 to 7 minutes)
	@echo "==> opening the dashboard of every demo scenario in headless Chromium (TOKENTRACE_DEMO_PAGES=all)"
	TOKENTRACE_DEMO_PAGES=all node --import tsx --test --test-timeout=1200000 --test-reporter=spec test/demo/scenario-pages.test.ts

screenshot: build/filter.wasm test-deps ## README's dashboard picture (docs/images/dashboard.png): the kv-cache-pressure demo in headless Chromium (about 4 minutes)
	@node --import tsx test/demo/screenshot.ts

run: | node_modules/.installed ## start the control plane on 127.0.0.1 with embedded defaults
	@echo "==> starting the control plane (dashboard at http://127.0.0.1:8080/dashboard unless TOKENTRACE_LISTEN_PORT says otherwise)"
	@node --import tsx control-plane/src/main.ts

manifests: build/filter.wasm build/oci/index.json build/filter-content.wasm build/oci-content/index.json | node_modules/.installed ## pin istio/ to the build (both modules): OCI manifest digest for oci:// URLs, file sha256 otherwise
	node --import tsx scripts/manifests.ts

build/oci/index.json: build/filter.wasm scripts/oci.ts | node_modules/.installed
	node --import tsx scripts/oci.ts

# The content module's image (oci://.../filter-content:<tag>), loaded only by policies that capture.
build/oci-content/index.json: build/filter-content.wasm scripts/oci.ts | node_modules/.installed
	node --import tsx scripts/oci.ts --wasm build/filter-content.wasm --out build/oci-content

oci: build/oci/index.json build/oci-content/index.json ## package build/filter.wasm and build/filter-content.wasm as OCI image layouts in build/oci/ and build/oci-content/ for oci:// URLs

clean: ## remove build outputs
	rm -rf build control-plane/dist

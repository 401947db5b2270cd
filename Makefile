# agentplane — every target installs what it needs first.
SHELL := /bin/bash
# npm scripts and these recipes use the Node 24 that the `node` devDependency installs.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

PORT ?= 8000
HOST ?= 127.0.0.1
CONTROL_PLANE_PORT ?= 1985
PLATFORM_DIR ?= .platform

.PHONY: install build dev platform test test-unit test-integration lint format bench bench-compare clean

# npm runs on Node 24 too: on an older system Node it would print an EBADENGINE warning for every
# package that needs Node 22 or 24 (pages of them). Before the first install, npx fetches the
# project's Node version just for this; afterwards node_modules/.bin/node is first on PATH.
node_modules/.package-lock.json: package.json package-lock.json */package.json
	@if [ "$$(node -p 'process.versions.node.split(".")[0]')" = 24 ]; then npm ci --no-audit --no-fund; else \
	  echo "npm ci on the project's Node (fetched with npx; this system's is $$(node --version))"; \
	  npx --yes --package=node@$$(node -p 'require("./package.json").devDependencies.node') -c 'npm ci --no-audit --no-fund'; fi
	@touch $@

install: node_modules/.package-lock.json

# npm links a bin only when its file exists, and dist/ did not at install time: relinked for
# `npx --no agent-server`.
build: install
	npm run build
	npm rebuild --ignore-scripts @agentplane/agent-server

## Runs the agent server with the example graph on the embedded (in-memory) store.
dev: build
	node agent-server/dist/cli/main.js dev --config agent-server/example/langgraph.json --port $(PORT) --host $(HOST)

## The whole platform on loopback, no cluster or Docker: Redis, the Kubernetes API test server and test
## kubelet, the control plane (generated API key) and the operator; writes $(PLATFORM_DIR)/env.
platform: install
	@command -v redis-server >/dev/null || { echo "make platform needs redis-server (Debian/Ubuntu: apt-get install redis-server)" >&2; exit 1; }
	exec node --conditions=source scripts/platform.ts --dir $(PLATFORM_DIR) --port $(CONTROL_PLANE_PORT)

## Runs every test; starts its own redis-server (or a testcontainers Redis) on a free port.
test: install
	@command -v redis-server >/dev/null || [ -n "$$REDIS_URI" ] || docker info >/dev/null 2>&1 || { \
	  echo "make test needs Redis: install redis-server (apt-get install redis-server), run Docker, or set REDIS_URI" >&2; exit 1; }
	npx vitest run

## The unit project only: tests beside the code, no child processes (under a minute).
test-unit: install
	npx vitest run --project unit

## The integration project only: `*.integration.test.ts` beside the code and the cross-component `test/`.
test-integration: install
	npx vitest run --project integration

lint: install
	npx biome check .
	npx tsc -p tsconfig.json

format: install
	npx biome check --write .

bench: build
	node bench/run.ts

## CPU per run of the agent server at BASE (a git ref, default main) against the working tree.
bench-compare: install
	scripts/bench-compare.sh $(or $(BASE),main)

clean:
	rm -rf node_modules */node_modules */dist

## Packaging: images, Helm chart, local k3d cluster (see docs/images.md, docs/install.md).
.PHONY: images chart-crds chart-docs cluster-up cluster-e2e cluster-down

images:
	scripts/cluster-images.sh

chart-crds:
	cp crds/*.yaml charts/agentplane/crds/

chart-docs: install
	node scripts/chart-values-table.ts --write docs/install.md

cluster-up: install
	scripts/cluster-up.sh

cluster-e2e: install
	scripts/cluster-e2e.sh

cluster-down:
	scripts/cluster-down.sh

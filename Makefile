# kubectl-disagg — everything a fresh machine needs, from the project's own files.
#
#   make demo   the bundled example against a local control plane (real kube-apiserver + etcd);
#               make demo-progressive, make demo-git: a RolloutPolicy with analysis, a rollout through git
#   make cluster  a playground: the control plane with the LWS status simulator until Ctrl-C
#   make test   lint and type checks, then every test: unit, property and integration
#
# Both create .venv and build the control plane binaries into the per-user cache on first use.

PYTHON ?= python3
VENV ?= .venv
PYTEST_ARGS ?=
# pytest-xdist workers per test tier (make test, unit, programs, integration); 1: none.
TEST_WORKERS ?= 2

# Bytecode is a cache like any other: where the environment says not to write it
# (PYTHONDONTWRITEBYTECODE), every run would compile the package, and pytest rewrite every test
# module, again, in each worker and in every process a test starts.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: package-table docs lint test mermaid unit programs integration demo demo-progressive demo-git render bench generate fuzz clean help argocd-testdata argocd-harness check-test check-demo zipapp

help:
	@grep -hE '^## ' $(MAKEFILE_LIST) | sed 's/^## //'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

# Each tier one pytest run on TEST_WORKERS workers, then its wall time and the slowest 20 tests.
TIERS = $(VENV)/bin/python hack/test_tiers.py --workers $(TEST_WORKERS)

# Fail in a second, naming what is missing, rather than after a long build.
check-test check-demo:
	@hack/check-prereqs.sh $(@:check-%=%)

## test: lint and type checks, then all tests (the unit, programs and integration tiers: a local control plane); prints each tier's wall time and the slowest 20 tests
test: check-test $(VENV)/.installed lint testenv argocd-harness mermaid
	$(TIERS) $(PYTEST_ARGS)

## lint: ruff over the repository and mypy --strict over the package (settings in pyproject.toml; why: CONTRIBUTING.md)
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy

## mermaid: mermaid from the npm registry into the per-user cache, for the pull request chart test (needs npm)
mermaid:
	hack/mermaid/install.sh >/dev/null

## package-table: CONTRIBUTING.md's package table, made again from the packages' docstrings
package-table:
	$(PYTHON) hack/package_table.py --write

## unit: the tests that need no control plane and run no other program (the package in-process)
unit: $(VENV)/.installed
	$(TIERS) --tier unit $(PYTEST_ARGS)

## programs: the tests that need no control plane but run other programs (Go oracles, the Argo CD harness, pip)
programs: $(VENV)/.installed argocd-harness
	$(TIERS) --tier programs $(PYTEST_ARGS)

## integration: only the tests against the local control plane
integration: check-test $(VENV)/.installed testenv
	$(TIERS) --tier integration $(PYTEST_ARGS)

## render: render the bundled examples (no cluster needed)
render: $(VENV)/.installed
	$(VENV)/bin/kubectl-disagg render -f examples/prefill-decode.yaml

# KEEP=1: the demo's cluster stays up afterwards (until Ctrl-C), and the demo says how to reach it.
DEMO_ARGS = $(if $(filter 1 yes true,$(KEEP)),--keep)

## demo: render, apply and roll out the bundled example on a local control plane (KEEP=1: leave the cluster running)
demo: check-demo $(VENV)/.installed testenv
	$(VENV)/bin/python -m testenv.demo $(DEMO_ARGS)

## demo-progressive: a RolloutPolicy's canary and waves gated on a real Prometheus: promoted, then a bad image aborted (KEEP=1 too)
demo-progressive: check-demo $(VENV)/.installed testenv
	@hack/prometheus/install.sh
	$(VENV)/bin/python -m testenv.demo_progressive $(DEMO_ARGS)

## demo-git: a rollout through git, one commit per step, synced by hack/gitops-sync.sh as Argo CD would (KEEP=1 too)
demo-git: check-demo $(VENV)/.installed testenv
	$(VENV)/bin/python -m testenv.demo_git $(DEMO_ARGS)

## bench: benchmarks whose figures go into BENCHMARKS.md (render runs from a regular install)
bench: $(VENV)/.installed testenv
	rm -rf .bench-venv && $(PYTHON) -m venv .bench-venv
	.bench-venv/bin/python -m pip install --quiet --disable-pip-version-check .
	# the harness's own client (testenv's LWS simulator); the product does not import it
	.bench-venv/bin/python -m pip install --quiet --disable-pip-version-check 'kubernetes>=31.0'
	.bench-venv/bin/python benchmarks/bench_render.py
	$(VENV)/bin/python benchmarks/bench_revision.py
	$(VENV)/bin/python benchmarks/bench_planner.py
	$(VENV)/bin/python benchmarks/bench_cluster.py
	.bench-venv/bin/python benchmarks/bench_status.py
	.bench-venv/bin/python benchmarks/bench_step.py
	.bench-venv/bin/python benchmarks/bench_reaction.py
	.bench-venv/bin/python benchmarks/bench_cmp.py
	.bench-venv/bin/python benchmarks/bench_waves.py
	.bench-venv/bin/python benchmarks/bench_gitops_step.py
	$(VENV)/bin/python benchmarks/bench_step_text.py
	$(VENV)/bin/python benchmarks/bench_dashboard.py  # Chromium through Selenium: the test extra's
	$(VENV)/bin/python benchmarks/git_drive.py

## argocd-harness: build the Argo CD harness of the Argo CD tests once into the per-user cache (the tests also build it on first use)
argocd-harness:
	hack/build-argocd-harness.sh

## argocd-testdata: regenerate the Argo CD health check testdata from a local control plane
argocd-testdata: $(VENV)/.installed testenv
	$(VENV)/bin/python -m testenv.argocd_health_testdata

## generate: regenerate the revision type table from k8s.io/api, the CRDs from hack/crd and their field reference (needs Go; tests check all are current)
generate:
	hack/generate-revision-table.sh
	hack/generate-crds.sh
	$(MAKE) docs

## docs: docs/reference/fields.md and docs/reference/cli/, made again from config/crd and the click commands (tests check they are current)
docs: $(VENV)/.installed
	$(VENV)/bin/python hack/field_reference.py --write
	$(VENV)/bin/python hack/cli_reference.py --write

## zipapp: dist/kubectl-disagg.pyz (the plugin and its dependencies in one file) and the krew archive and manifest
zipapp: $(VENV)/.installed
	$(VENV)/bin/python hack/build_zipapp.py

## fuzz: the long fuzz campaign (FUZZ_EXAMPLES inputs per strategy, a server dry-run sample, the rollout property and accepted policies rolled out); figures in docs/reliability.md
FUZZ_EXAMPLES ?= 2000
FUZZ_SERVER_EXAMPLES ?= 500
ROLLOUT_EXAMPLES ?= 2500
FUZZ_ROLLOUTS ?= 20
fuzz: $(VENV)/.installed testenv
	KUBECTL_DISAGG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VENV)/bin/python -m pytest tests/unit/core/test_fuzz.py tests/unit/manifests/test_yaml_oracle.py -s -q
	KUBECTL_DISAGG_ROLLOUT_EXAMPLES=$(ROLLOUT_EXAMPLES) $(VENV)/bin/python -m pytest tests/unit/rollout/test_progressive_property.py -q
	KUBECTL_DISAGG_FUZZ_SERVER_EXAMPLES=$(FUZZ_SERVER_EXAMPLES) $(VENV)/bin/python -m pytest tests/integration/test_fuzz_server.py -s -q
	KUBECTL_DISAGG_FUZZ_ROLLOUTS=$(FUZZ_ROLLOUTS) $(VENV)/bin/python -m pytest tests/integration/test_fuzz_rollouts.py -s -q

clean:
	rm -rf $(VENV) .bench-venv build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache

include hack/testenv.mk

# Local control plane (real kube-apiserver + etcd) for the integration tests
# and demos. Included from the top-level Makefile, which defines
# $(VENV)/.installed (a venv with the project installed).

VENV ?= .venv

.PHONY: testenv upstream cluster cluster-upstream

## testenv: build kube-apiserver, etcd, kubectl, the fault-injection tools and (where its source is beside the clone) the upstream stack once into the per-user cache
testenv:
	@hack/check-prereqs.sh testenv
	hack/build-testenv.sh
	hack/build-faults.sh
	@$(MAKE) --no-print-directory upstream

## upstream: build the LWS manager from ../shared/upstream and kube-controller-manager, kube-scheduler and kwok (skipped, saying so, without the source)
upstream:
	@status=0; hack/build-lws-manager.sh >/dev/null || status=$$?; \
	if [ $$status -eq 0 ]; then hack/build-upstream-tools.sh >/dev/null; \
	elif [ $$status -eq 3 ]; then echo "upstream: no LWS source beside the clone; the upstream tier will skip"; \
	else exit $$status; fi

## cluster-upstream: the local control plane with the real LWS and DisaggregatedSet controllers and kwok nodes until Ctrl-C
cluster-upstream: $(VENV)/.installed upstream
	$(VENV)/bin/python -m testenv.upstream

## cluster: a playground until Ctrl-C: the local control plane with the CRDs, the LWS status simulator and namespace serving; prints the KUBECONFIG to export
cluster: $(VENV)/.installed testenv
	$(VENV)/bin/python -m testenv.controlplane

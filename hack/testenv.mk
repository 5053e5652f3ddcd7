# Local control plane (real kube-apiserver + etcd) for the integration tests
# and demos. Included from the top-level Makefile, which defines
# $(VENV)/.installed (a venv with the project installed).

VENV ?= .venv

.PHONY: testenv cluster

## testenv: build kube-apiserver, etcd, kubectl and the fault-injection tools once into the per-user cache
testenv:
	@hack/check-prereqs.sh testenv
	hack/build-testenv.sh
	hack/build-faults.sh

## cluster: run a local control plane with the CRDs installed until Ctrl-C
cluster: $(VENV)/.installed testenv
	$(VENV)/bin/python -m testenv.controlplane

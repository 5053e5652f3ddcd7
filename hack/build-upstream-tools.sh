#!/usr/bin/env bash
# Build the cluster components of the upstream tier (testenv/upstream.py) once per version of
# their tools modules, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/upstream/tools/<k8s version>/bin/
#
#   kube-controller-manager, kube-scheduler   k8s.io/kubernetes, pinned by hack/kube-tools
#                                             (the same versions as hack/testenv, so the packages
#                                             they share with kube-apiserver are not compiled twice)
#   kwok                                      sigs.k8s.io/kwok, pinned by hack/kwok
#
# Everything comes from the Go module proxy. A cache of its own, with a fingerprint of its own:
# the control plane of hack/build-testenv.sh is neither rebuilt nor restamped by it. Built, cached
# and swapped into place as hack/lib/cached-build.sh describes. Prints the bin directory on
# stdout; --is-built builds nothing (exit 1 when a build is due).
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-upstream-tools
readonly KUBE_DIR="${HACK_DIR}/kube-tools"
readonly KWOK_DIR="${HACK_DIR}/kwok"
readonly BINARIES=(kube-controller-manager kube-scheduler kwok)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
MODULE_DIR="${KUBE_DIR}"
BUILD_FLAGS=()
KUBE_FLAGS=()
KWOK_FLAGS=()
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

module_version() {
  awk -v mod="$2" '$1 == mod { print $2; exit }' "$1/go.mod"
}

# As hack/build-testenv.sh stamps kube-apiserver: the version the way release builds report it.
set_flags() {
  local version="$1" kwok_version="$2"
  KUBE_FLAGS=(-trimpath -buildvcs=false "-ldflags=$(kube_ldflags "${version}")")
  KWOK_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}")
}

# kwok reads what its fake nodes and pods go through (Stage objects) from its configuration: the
# release's own "fast" stages (nodes ready at once; pods running and ready once bound, deleted
# once terminating), taken from the same module version the binary is built from.
copy_kwok_stages() {
  local dir stage
  dir="$("${GO_BIN}" -C "${KWOK_DIR}" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)" || die "cannot locate sigs.k8s.io/kwok in the module cache"
  mkdir -p "$1"
  for stage in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    cp "${dir}/kustomize/stage/${stage}.yaml" "$1/" || die "kwok ${stage} stage not found in ${dir}"
  done
}

# Anything that changes the produced binaries must change the fingerprint.
fingerprint() {
  { cat "${KUBE_DIR}/go.mod" "${KUBE_DIR}/go.sum" "${KWOK_DIR}/go.mod" "${KWOK_DIR}/go.sum"
    echo "${KUBE_FLAGS[*]} ${KWOK_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

build_into() {
  # kwok first: it shares nothing with kube-apiserver, whose packages the two kube binaries
  # then find in the Go build cache once hack/build-testenv.sh has compiled them.
  MODULE_DIR="${KWOK_DIR}" BUILD_FLAGS=("${KWOK_FLAGS[@]}")
  log "downloading modules pinned by ${MODULE_DIR}/go.sum ..."
  "${GO_BIN}" -C "${MODULE_DIR}" mod download || die "go mod download failed"
  build_one "$1/bin/kwok" sigs.k8s.io/kwok/cmd/kwok
  copy_kwok_stages "$1/stages"
  MODULE_DIR="${KUBE_DIR}" BUILD_FLAGS=("${KUBE_FLAGS[@]}")
  build_one "$1/bin/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
  build_one "$1/bin/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler
  log "built $("$1/bin/kube-controller-manager" --version) and kwok $("$1/bin/kwok" --version 2>&1 | head -c 80)"
}

main() {
  local version kwok_version
  version="$(module_version "${KUBE_DIR}" k8s.io/kubernetes)"
  kwok_version="$(module_version "${KWOK_DIR}" sigs.k8s.io/kwok)"
  [[ -n "${version}" && -n "${kwok_version}" ]] || die "cannot read the versions from ${KUBE_DIR}/go.mod and ${KWOK_DIR}/go.mod"
  set_flags "${version}" "${kwok_version}"
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/upstream/tools" "${version}" "${1:-}"
}

main "$@"

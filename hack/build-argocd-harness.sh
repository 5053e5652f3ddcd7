#!/usr/bin/env bash
# Build the Argo CD harness used by the Argo CD tests (tests/oracles/argocd_harness.py), once per
# version of hack/argocd, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/argocd-harness/argocd-v3.5.1/bin/argocd-harness
#
# hack/argocd is ours: what Argo CD v3.5.1's repo-server, cmp-server and Lua VM do, on the
# libraries Argo CD pins (gopher-lua, gopher-json, apimachinery, sigs.k8s.io/yaml, ...),
# from the Go module proxy. Built, cached and swapped into place as hack/lib/cached-build.sh
# describes. Prints the bin directory on stdout.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-argocd-harness
readonly MODULE_DIR="${HACK_DIR}/argocd"
readonly BINARIES=(argocd-harness)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
readonly ARGOCD_VERSION=v3.5.1  # the release every function of hack/argocd follows
BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w")
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

# Anything that changes the produced binary must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum" "${MODULE_DIR}"/*.go
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

build_into() {
  build_one "$1/bin/argocd-harness" .
}

main() {
  # One directory per mirrored Argo CD release; the stamp inside tells a stale build.
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/argocd-harness" "argocd-${ARGOCD_VERSION}" "$@"
}

main "$@"

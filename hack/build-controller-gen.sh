#!/usr/bin/env bash
# Build controller-gen (sigs.k8s.io/controller-tools, pinned by hack/crd/tools: go.mod + go.sum,
# from the Go module proxy) once per version into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/tools/controller-gen/<version>/bin/controller-gen
#
# for hack/generate-crds.sh. Built, cached and swapped into place as hack/lib/cached-build.sh
# describes. Prints the bin directory on stdout.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-controller-gen
readonly MODULE_DIR="${HACK_DIR}/crd/tools"
readonly BINARIES=(controller-gen)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w")
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

controller_tools_version() {
  awk '$1 == "require" && $2 == "sigs.k8s.io/controller-tools" { print $3; exit }
       $1 == "sigs.k8s.io/controller-tools" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

# Anything that changes the produced binary must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum"
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

build_into() {
  build_one "$1/bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
  log "built $("$1/bin/controller-gen" --version)"
}

main() {
  local version
  version="$(controller_tools_version)"
  [[ -n "${version}" ]] || die "cannot read the controller-tools version from ${MODULE_DIR}/go.mod"
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/tools/controller-gen" "${version}" "$@"
}

main "$@"

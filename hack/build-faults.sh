#!/usr/bin/env bash
# Build the fault-injection tools used by tests/integration/test_faults.py, once per
# version of the tools module, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/testenv/toxiproxy/<toxiproxy version>/bin/
#
#   toxiproxy-server  github.com/Shopify/toxiproxy/v2, pinned by hack/faults (go.mod + go.sum),
#                     from the Go module proxy: TCP faults between the client and the API server
#   faultproxy        hack/faults/faultproxy, ours: HTTP faults (500, 409, 429) and stalls
#
# Built, cached and swapped into place as hack/lib/cached-build.sh describes. Prints the bin
# directory on stdout.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-faults
readonly MODULE_DIR="${HACK_DIR}/faults"
readonly BINARIES=(toxiproxy-server faultproxy)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
BUILD_FLAGS=()
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

toxiproxy_version() {
  awk '$1 == "github.com/Shopify/toxiproxy/v2" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

# Anything that changes the produced binaries must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum" "${MODULE_DIR}"/faultproxy/*.go
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

build_into() {
  build_one "$1/bin/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server
  build_one "$1/bin/faultproxy" ./faultproxy
  log "built $("$1/bin/toxiproxy-server" -version 2>&1)"
}

main() {
  local version
  version="$(toxiproxy_version)"
  [[ -n "${version}" ]] || die "cannot read the toxiproxy version from ${MODULE_DIR}/go.mod"
  # toxiproxy-server -version reports what main's Version variable holds
  BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w -X github.com/Shopify/toxiproxy/v2.Version=${version}")
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/testenv/toxiproxy" "${version}"
}

main "$@"

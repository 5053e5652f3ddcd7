#!/usr/bin/env bash
# Build the YAML oracle used by tests/unit/manifests/test_yaml_oracle.py, once per version of
# its module, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/yaml-oracle/<sigs.k8s.io/yaml version>/bin/
#
#   yaml2json  hack/yaml, ours: YAML streams read as kubectl reads a manifest file
#              (k8s.io/apimachinery's decoder over sigs.k8s.io/yaml, pinned by hack/yaml/go.mod
#              and go.sum, from the Go module proxy), one JSON line per stream
#
# Built, cached and swapped into place as hack/lib/cached-build.sh describes. Prints the bin
# directory on stdout.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-yaml-oracle
readonly MODULE_DIR="${HACK_DIR}/yaml"
readonly BINARIES=(yaml2json)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
BUILD_FLAGS=(-trimpath -buildvcs=false)
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

yaml_version() {
  awk '$1 == "sigs.k8s.io/yaml" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

# Anything that changes the produced binary must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum" "${MODULE_DIR}"/*.go
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

build_into() {
  build_one "$1/bin/yaml2json" .
}

main() {
  local version
  version="$(yaml_version)"
  [[ -n "${version}" ]] || die "cannot read the sigs.k8s.io/yaml version from ${MODULE_DIR}/go.mod"
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/yaml-oracle" "${version}" "$@"
}

main "$@"

#!/usr/bin/env bash
# Build actionlint, which checks the GitHub Actions workflow the rollout driver ships
# (deploy/driver/github-workflow.yaml), once per version of its module, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/actionlint/<actionlint version>/bin/
#
#   actionlint  github.com/rhysd/actionlint's command, pinned by hack/actionlint/go.mod and go.sum,
#               from the Go module proxy
#
# Built, cached and swapped into place as hack/lib/cached-build.sh describes. Prints the bin
# directory on stdout.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-actionlint
readonly MODULE_DIR="${HACK_DIR}/actionlint"
readonly BINARIES=(actionlint)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
BUILD_FLAGS=(-trimpath -buildvcs=false)
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

actionlint_version() {
  awk '$1 == "require" && $2 == "github.com/rhysd/actionlint" { print $3; exit }
       $1 == "github.com/rhysd/actionlint" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

# Anything that changes the produced binary must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum" "${MODULE_DIR}"/*.go
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

build_into() {
  build_one "$1/bin/actionlint" github.com/rhysd/actionlint/cmd/actionlint
}

main() {
  local version
  version="$(actionlint_version)"
  [[ -n "${version}" ]] || die "cannot read the actionlint version from ${MODULE_DIR}/go.mod"
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/actionlint" "${version}" "$@"
}

main "$@"

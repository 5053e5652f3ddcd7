#!/usr/bin/env bash
# Build the local control plane binaries (kube-apiserver, etcd, kubectl) used by
# the integration tests and `make demo`, once per version, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/testenv/<k8s version>/bin/
#
# Versions are pinned by the tools module in hack/testenv (go.mod + go.sum);
# everything comes from the Go module proxy, nothing else is downloaded. Built,
# cached and swapped into place as hack/lib/cached-build.sh describes; a warm run
# only hashes two small files.
#
# Prints the bin directory on stdout; progress and errors go to stderr.
# With --is-built it builds nothing: exit 0 (printing the bin directory) when
# the cache is complete, 1 when a build is due (hack/check-prereqs.sh asks).
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-testenv
readonly MODULE_DIR="${HACK_DIR}/testenv"
readonly BINARIES=(kube-apiserver etcd kubectl)
# kube-apiserver, etcd and kubectl are all released as static binaries.
export CGO_ENABLED=0
# The tools module's go.sum is complete and must stay untouched by builds.
export GOFLAGS="-mod=readonly"
BUILD_FLAGS=()
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

k8s_version() {
  awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

# -s -w: no symbol tables or DWARF (about a third smaller); the version stamped
# as release builds stamp it (see kube_ldflags).
set_build_flags() {
  BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=$(kube_ldflags "$1")")
}

# Anything that changes the produced binaries must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum"; echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } |
    sha256sum | cut -d' ' -f1
}

build_into() {
  local etcd_version
  build_one "$1/bin/etcd" go.etcd.io/etcd/server/v3
  build_one "$1/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  build_one "$1/bin/kubectl" k8s.io/kubernetes/cmd/kubectl
  # Smoke-test the binaries (no pipe into head: pipefail would see SIGPIPE).
  log "built $("$1/bin/kube-apiserver" --version)"
  etcd_version="$("$1/bin/etcd" --version)"
  log "built ${etcd_version%%$'\n'*}"
}

main() {
  local version
  version="$(k8s_version)"
  [[ -n "${version}" ]] || die "cannot read the k8s.io/kubernetes version from ${MODULE_DIR}/go.mod"
  set_build_flags "${version}"
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/testenv" "${version}" "${1:-}"
}

main "$@"

#!/usr/bin/env bash
# Build the local control plane binaries (kube-apiserver, etcd, kubectl) used by
# the integration tests and `make cluster`, once per version, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/testenv/<k8s version>/bin/
#
# Versions are pinned by the tools module in hack/testenv (go.mod + go.sum);
# everything comes from the Go module proxy, nothing else is downloaded.
#
# The cache directory is only ever created by renaming a complete build into
# place, and carries a stamp holding a fingerprint of the tools module and the
# build flags. A directory without a matching stamp (interrupted build, edited
# go.mod, older script) is rebuilt. A warm run only hashes two small files.
#
# Prints the bin directory on stdout; progress and errors go to stderr.
# With --is-built it builds nothing: exit 0 (printing the bin directory) when
# the cache is complete, 1 when a build is due (hack/check-prereqs.sh asks).
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly MODULE_DIR="${HACK_DIR}/testenv"
readonly VERSION_PKGS=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
# kube-apiserver, etcd and kubectl are all released as static binaries.
export CGO_ENABLED=0
# The tools module's go.sum is complete and must stay untouched by builds.
export GOFLAGS="-mod=readonly"

# Set in main once the version is known; removed on exit unless renamed into place.
BUILD_FLAGS=()
BUILD_TMP=""

log() { printf 'build-testenv: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_go() {
  if [[ -n "${GO:-}" ]]; then echo "${GO}"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go; return; fi
  die "no Go toolchain found (install Go or set GO=/path/to/go)"
}

k8s_version() {
  awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

# -s -w: no symbol tables or DWARF (about a third smaller). The -X flags stamp
# the version the way upstream's hack/lib/version.sh does; without them the
# binaries report v0.0.0-master and kubectl warns about version skew.
set_build_flags() {
  local version="$1" major minor ldflags="-s -w" pkg
  IFS=. read -r major minor _ <<<"${version#v}"
  for pkg in "${VERSION_PKGS[@]}"; do
    ldflags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=${major}"
    ldflags+=" -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
  done
  BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=${ldflags}")
}

cleanup() {
  if [[ -n "${BUILD_TMP}" ]]; then
    rm -rf "${BUILD_TMP}" "${BUILD_TMP}.stale"
  fi
}

# Anything that changes the produced binaries must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum"; echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } |
    sha256sum | cut -d' ' -f1
}

is_complete() {
  local dir="$1" want="$2"
  [[ -f "${dir}/stamp" && "$(cat "${dir}/stamp")" == "${want}" ]] || return 1
  local bin
  for bin in kube-apiserver etcd kubectl; do
    [[ -x "${dir}/bin/${bin}" ]] || return 1
  done
}

# build_one OUT PACKAGE
build_one() {
  local out="$1" pkg="$2" start=${SECONDS}
  log "building $(basename "${out}") from ${pkg} ..."
  if ! "${GO_BIN}" build -C "${MODULE_DIR}" "${BUILD_FLAGS[@]}" -o "${out}" "${pkg}"; then
    die "go build ${pkg} failed (see the Go error above)"
  fi
  log "  done in $((SECONDS - start))s ($(du -h "${out}" | cut -f1))"
}

build_into() {
  local dir="$1" start=${SECONDS}
  log "downloading modules pinned by ${MODULE_DIR}/go.sum ..."
  "${GO_BIN}" -C "${MODULE_DIR}" mod download || die "go mod download failed"
  log "  done in $((SECONDS - start))s"
  mkdir -p "${dir}/bin"
  build_one "${dir}/bin/etcd" go.etcd.io/etcd/server/v3
  build_one "${dir}/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  build_one "${dir}/bin/kubectl" k8s.io/kubernetes/cmd/kubectl
  # Smoke-test the binaries (no pipe into head: pipefail would see SIGPIPE).
  local etcd_version
  log "built $("${dir}/bin/kube-apiserver" --version)"
  etcd_version="$("${dir}/bin/etcd" --version)"
  log "built ${etcd_version%%$'\n'*}"
}

main() {
  local version want cache_root dest
  version="$(k8s_version)"
  [[ -n "${version}" ]] || die "cannot read the k8s.io/kubernetes version from ${MODULE_DIR}/go.mod"
  set_build_flags "${version}"
  want="$(fingerprint)"
  cache_root="${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/testenv"
  dest="${cache_root}/${version}"

  if is_complete "${dest}" "${want}"; then
    echo "${dest}/bin"
    return
  fi
  [[ "${1:-}" != "--is-built" ]] || exit 1

  mkdir -p "${cache_root}"
  # Serialise concurrent builders (two test sessions starting at once); the
  # loser finds the winner's complete build when it gets the lock.
  exec 9>"${cache_root}/.${version}.lock"
  flock 9
  if is_complete "${dest}" "${want}"; then
    echo "${dest}/bin"
    return
  fi

  GO_BIN="$(find_go)"
  log "building the test environment ${version} into ${dest} (missing, partial or stale)"
  log "using $("${GO_BIN}" version); this takes a while on a small machine"
  local start=${SECONDS}
  # Build next to the destination so the final rename stays on one filesystem.
  trap cleanup EXIT
  BUILD_TMP="$(mktemp -d "${cache_root}/.build-${version}.XXXXXX")"
  build_into "${BUILD_TMP}"
  echo "${want}" >"${BUILD_TMP}/stamp"

  # Swap the complete build in; a stale directory is moved aside first
  # because rename(2) cannot replace a non-empty directory.
  if [[ -e "${dest}" ]]; then
    log "replacing stale ${dest}"
    mv "${dest}" "${BUILD_TMP}.stale"
  fi
  mv "${BUILD_TMP}" "${dest}"
  log "test environment ready in $((SECONDS - start))s: ${dest}/bin"
  echo "${dest}/bin"
}

main "$@"

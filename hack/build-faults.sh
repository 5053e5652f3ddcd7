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
# Same scheme as hack/build-testenv.sh: the directory only ever appears by renaming a complete
# build into place, with a stamp fingerprinting the module, our sources and the build flags; a
# directory without a matching stamp is rebuilt. Prints the bin directory on stdout.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly MODULE_DIR="${HACK_DIR}/faults"
readonly BINARIES=(toxiproxy-server faultproxy)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
VERSION_VAR=github.com/Shopify/toxiproxy/v2.Version  # toxiproxy-server -version; set in main
BUILD_FLAGS=()

BUILD_TMP=""

log() { printf 'build-faults: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_go() {
  if [[ -n "${GO:-}" ]]; then echo "${GO}"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go; return; fi
  die "no Go toolchain found (install Go or set GO=/path/to/go)"
}

toxiproxy_version() {
  awk '$1 == "github.com/Shopify/toxiproxy/v2" { print $2; exit }' "${MODULE_DIR}/go.mod"
}

cleanup() {
  if [[ -n "${BUILD_TMP}" ]]; then
    rm -rf "${BUILD_TMP}" "${BUILD_TMP}.stale"
  fi
}

# Anything that changes the produced binaries must change the fingerprint.
fingerprint() {
  { cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum" "${MODULE_DIR}"/faultproxy/*.go
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } | sha256sum | cut -d' ' -f1
}

is_complete() {
  local dir="$1" want="$2" bin
  [[ -f "${dir}/stamp" && "$(cat "${dir}/stamp")" == "${want}" ]] || return 1
  for bin in "${BINARIES[@]}"; do
    [[ -x "${dir}/bin/${bin}" ]] || return 1
  done
}

build_one() {
  local out="$1" pkg="$2" start=${SECONDS}
  log "building $(basename "${out}") from ${pkg} ..."
  "${GO_BIN}" build -C "${MODULE_DIR}" "${BUILD_FLAGS[@]}" -o "${out}" "${pkg}" ||
    die "go build ${pkg} failed (see the Go error above)"
  log "  done in $((SECONDS - start))s ($(du -h "${out}" | cut -f1))"
}

main() {
  local version want cache_root dest
  version="$(toxiproxy_version)"
  [[ -n "${version}" ]] || die "cannot read the toxiproxy version from ${MODULE_DIR}/go.mod"
  BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w -X ${VERSION_VAR}=${version}")
  want="$(fingerprint)"
  cache_root="${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/testenv/toxiproxy"
  dest="${cache_root}/${version}"

  if is_complete "${dest}" "${want}"; then
    echo "${dest}/bin"
    return
  fi

  mkdir -p "${cache_root}"
  exec 9>"${cache_root}/.${version}.lock"
  flock 9
  if is_complete "${dest}" "${want}"; then
    echo "${dest}/bin"
    return
  fi

  GO_BIN="$(find_go)"
  log "building the fault-injection tools into ${dest} (missing, partial or stale)"
  trap cleanup EXIT
  BUILD_TMP="$(mktemp -d "${cache_root}/.build-${version}.XXXXXX")"
  "${GO_BIN}" -C "${MODULE_DIR}" mod download || die "go mod download failed"
  mkdir -p "${BUILD_TMP}/bin"
  build_one "${BUILD_TMP}/bin/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server
  build_one "${BUILD_TMP}/bin/faultproxy" ./faultproxy
  log "built $("${BUILD_TMP}/bin/toxiproxy-server" -version 2>&1)"
  echo "${want}" >"${BUILD_TMP}/stamp"

  if [[ -e "${dest}" ]]; then
    log "replacing stale ${dest}"
    mv "${dest}" "${BUILD_TMP}.stale"
  fi
  mv "${BUILD_TMP}" "${dest}"
  echo "${dest}/bin"
}

main "$@"

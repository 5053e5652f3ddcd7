#!/usr/bin/env bash
# Build the upstream LWS manager (the LeaderWorkerSet and DisaggregatedSet controllers and their
# webhooks) from the source archive beside the clone, once per archive, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/upstream/lws/<commit>/
#     bin/lws-manager   go build ./cmd of the extracted source
#     src/              the extracted source: its config/ (CRDs, webhook and RBAC manifests) is
#                       what testenv/upstream.py installs
#
# The archive is ../shared/upstream/lws-<commit>.tar.gz (or $KUBECTL_DISAGG_LWS_SOURCE). Nothing
# of it enters the repository: it is unpacked into the cache at build time, and its dependencies
# come from the Go module proxy as its own go.sum pins them. Built, cached and swapped into place
# as hack/lib/cached-build.sh describes. Prints the bin directory on stdout; --is-built builds
# nothing (exit 1 when a build is due). Exit 3 when the archive is absent.
set -euo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOG_NAME=build-lws-manager
readonly BINARIES=(lws-manager)
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly"
BUILD_FLAGS=()
MODULE_DIR=""
# shellcheck source=lib/cached-build.sh
source "${HACK_DIR}/lib/cached-build.sh"

source_archive() {
  if [[ -n "${KUBECTL_DISAGG_LWS_SOURCE:-}" ]]; then
    echo "${KUBECTL_DISAGG_LWS_SOURCE}"
    return
  fi
  local found
  found="$(ls "${HACK_DIR}/../../shared/upstream"/lws-*.tar.gz 2>/dev/null | head -n1 || true)"
  echo "${found}"
}

# Anything that changes the produced binary must change the fingerprint.
fingerprint() {
  { sha256sum <"${ARCHIVE}"; echo "${BUILD_FLAGS[*]} CGO_ENABLED=${CGO_ENABLED}"; } |
    sha256sum | cut -d' ' -f1
}

build_into() {
  local top
  mkdir -p "$1/src"
  tar -xzf "${ARCHIVE}" -C "$1/src" --strip-components=1 || die "cannot unpack ${ARCHIVE}"
  top="$1/src"
  [[ -f "${top}/go.mod" && -d "${top}/cmd" ]] || die "${ARCHIVE} holds no go.mod and cmd/ at its top"
  MODULE_DIR="${top}"
  log "downloading modules pinned by the archive's go.sum ..."
  "${GO_BIN}" -C "${MODULE_DIR}" mod download || die "go mod download failed"
  build_one "$1/bin/lws-manager" ./cmd
  log "built $("$1/bin/lws-manager" --version 2>&1 | head -c 200)"
}

main() {
  ARCHIVE="$(source_archive)"
  if [[ -z "${ARCHIVE}" || ! -f "${ARCHIVE}" ]]; then
    log "no LWS source archive (../shared/upstream/lws-*.tar.gz or KUBECTL_DISAGG_LWS_SOURCE)"
    exit 3
  fi
  local commit
  commit="$(basename "${ARCHIVE}" .tar.gz)"
  commit="${commit#lws-}"
  BUILD_FLAGS=(-trimpath -buildvcs=false
    "-ldflags=-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=${commit} -X sigs.k8s.io/lws/pkg/version.GitCommit=${commit}")
  cached_build "${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/upstream/lws" "${commit}" "${1:-}"
}

main "$@"

# Shared by hack/build-testenv.sh and hack/build-faults.sh (sourced, not run): Go tools built
# once per fingerprint into a per-user cache directory.
#
# The cache directory only ever appears by renaming a complete build into place, and carries a
# stamp holding a fingerprint of everything that shapes the binaries (the caller's `fingerprint`).
# A directory without a matching stamp (an interrupted build, an edited go.mod, an older script)
# is rebuilt. Concurrent builders are serialised by a lock; the loser finds the winner's build.
#
# The caller sets LOG_NAME, MODULE_DIR, BINARIES and BUILD_FLAGS, and defines `fingerprint`
# and `build_into DIR` (which fills DIR/bin); then it calls `cached_build CACHE_ROOT VERSION`.

BUILD_TMP=""

log() { printf '%s: %s\n' "${LOG_NAME}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_go() {
  if [[ -n "${GO:-}" ]]; then echo "${GO}"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go; return; fi
  die "no Go toolchain found (install Go or set GO=/path/to/go)"
}

cleanup() {
  if [[ -n "${BUILD_TMP}" ]]; then
    rm -rf "${BUILD_TMP}" "${BUILD_TMP}.stale"
  fi
}

is_complete() {
  local dir="$1" want="$2" bin
  [[ -f "${dir}/stamp" && "$(cat "${dir}/stamp")" == "${want}" ]] || return 1
  for bin in "${BINARIES[@]}"; do
    [[ -x "${dir}/bin/${bin}" ]] || return 1
  done
}

# kube_ldflags VERSION: -s -w and the -X flags that stamp a Kubernetes binary's version the way
# upstream's release builds do (without them it reports v0.0.0-master and kubectl warns about
# version skew), for k8s.io/component-base and k8s.io/client-go.
kube_ldflags() {
  local version="$1" major minor ldflags="-s -w" pkg
  IFS=. read -r major minor _ <<<"${version#v}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=${major}"
    ldflags+=" -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
  done
  echo "${ldflags}"
}

# build_one OUT PACKAGE: one binary of the tools module
build_one() {
  local out="$1" pkg="$2" start=${SECONDS}
  log "building $(basename "${out}") from ${pkg} ..."
  "${GO_BIN}" build -C "${MODULE_DIR}" "${BUILD_FLAGS[@]}" -o "${out}" "${pkg}" ||
    die "go build ${pkg} failed (see the Go error above)"
  log "  done in $((SECONDS - start))s ($(du -h "${out}" | cut -f1))"
}

# cached_build CACHE_ROOT VERSION [--is-built]: print the bin directory, building it first when
# it is missing, partial or stale; with --is-built, exit 1 instead of building.
cached_build() {
  local cache_root="$1" version="$2" want dest start
  want="$(fingerprint)"
  dest="${cache_root}/${version}"
  if is_complete "${dest}" "${want}"; then
    echo "${dest}/bin"
    return
  fi
  [[ "${3:-}" != "--is-built" ]] || exit 1

  mkdir -p "${cache_root}"
  exec 9>"${cache_root}/.${version}.lock"
  flock 9
  if is_complete "${dest}" "${want}"; then
    echo "${dest}/bin"
    return
  fi

  GO_BIN="$(find_go)"
  log "building into ${dest} (missing, partial or stale) with $("${GO_BIN}" version)"
  start=${SECONDS}
  # Build next to the destination so the final rename stays on one filesystem.
  trap cleanup EXIT
  BUILD_TMP="$(mktemp -d "${cache_root}/.build-${version}.XXXXXX")"
  # A caller whose module only appears inside build_into (MODULE_DIR empty) downloads there.
  if [[ -n "${MODULE_DIR}" ]]; then
    log "downloading modules pinned by ${MODULE_DIR}/go.sum ..."
    "${GO_BIN}" -C "${MODULE_DIR}" mod download || die "go mod download failed"
  fi
  mkdir -p "${BUILD_TMP}/bin"
  build_into "${BUILD_TMP}"
  echo "${want}" >"${BUILD_TMP}/stamp"

  # rename(2) cannot replace a non-empty directory: a stale one is moved aside first.
  if [[ -e "${dest}" ]]; then
    log "replacing stale ${dest}"
    mv "${dest}" "${BUILD_TMP}.stale"
  fi
  mv "${BUILD_TMP}" "${dest}"
  log "ready in $((SECONDS - start))s: ${dest}/bin"
  echo "${dest}/bin"
}

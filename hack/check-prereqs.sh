#!/usr/bin/env bash
# Check what `make demo`, `make test` and `make testenv` need before any of
# them spends minutes on a build, and say in one line per missing piece what
# it is and how to get it. Exit 0 when all is there, 1 otherwise.
#
#   hack/check-prereqs.sh demo|test|testenv|unit
#
# Honours PYTHON (the interpreter make uses), GO (like build-testenv.sh),
# KUBECTL_DISAGG_TESTENV_BIN (prebuilt binaries: no Go needed),
# KUBECTL_DISAGG_CRDS (upstream CRDs), CI=true (upstream CRDs required for
# `test`), and KUBECTL_DISAGG_MIN_FREE_MB (free disk a control plane build needs).
set -uo pipefail

readonly HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REPO_DIR="$(dirname "${HACK_DIR}")"
readonly PYTHON_MIN=(3 11)
# A cold build fills about 3.5 GB (module cache, build cache, binaries); keep a margin.
readonly BUILD_FREE_MB="${KUBECTL_DISAGG_MIN_FREE_MB:-4500}"
readonly TARGET="${1:-test}"

missing=0
need() { printf 'check-prereqs: missing: %s\n' "$*" >&2; missing=1; }

check_python() {
  local python="${PYTHON:-python3}" version
  if ! command -v "${python}" >/dev/null 2>&1; then
    need "Python >= ${PYTHON_MIN[0]}.${PYTHON_MIN[1]} (no '${python}' on PATH): install python3 (e.g. apt-get install python3 python3-venv) or run make PYTHON=/path/to/python3.11"
    return
  fi
  version="$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
  if ! "${python}" -c "import sys; sys.exit(sys.version_info[:2] < (${PYTHON_MIN[0]}, ${PYTHON_MIN[1]}))" 2>/dev/null; then
    need "Python >= ${PYTHON_MIN[0]}.${PYTHON_MIN[1]} ('${python}' is ${version:-unusable}): install a newer python3 or run make PYTHON=/path/to/python3.11"
    return
  fi
  if ! "${python}" -c 'import venv, ensurepip' 2>/dev/null; then
    need "the Python venv module ('${python} -m venv' cannot create environments): apt-get install python3-venv (Debian/Ubuntu)"
  fi
}

check_command() {  # check_command NAME HOW-TO-GET-IT
  command -v "$1" >/dev/null 2>&1 || need "$1 (not on PATH): $2"
}

# The Go toolchain, only when the control plane binaries still have to be built.
# The upstream stack is built too, or has no source to be built from (build-lws-manager.sh: 3).
upstream_built() {
  local status=0
  bash "${HACK_DIR}/build-lws-manager.sh" --is-built >/dev/null 2>&1 || status=$?
  [[ ${status} -eq 3 ]] || { [[ ${status} -eq 0 ]] && bash "${HACK_DIR}/build-upstream-tools.sh" --is-built >/dev/null 2>&1; }
}

check_go() {
  if [[ -n "${KUBECTL_DISAGG_TESTENV_BIN:-}" ]]; then
    local bin
    for bin in etcd kube-apiserver kubectl; do
      [[ -x "${KUBECTL_DISAGG_TESTENV_BIN}/${bin}" ]] ||
        need "${bin} in KUBECTL_DISAGG_TESTENV_BIN=${KUBECTL_DISAGG_TESTENV_BIN}: point it at a directory with etcd, kube-apiserver and kubectl, or unset it to build them"
    done
    return
  fi
  if bash "${HACK_DIR}/build-testenv.sh" --is-built >/dev/null 2>&1 && upstream_built; then
    return  # built before: no Go needed
  fi
  local required go version
  required="$(awk '$1 == "go" { print $2; exit }' "${HACK_DIR}/testenv/go.mod")"
  go="${GO:-$(command -v go 2>/dev/null || { [[ -x /usr/local/go/bin/go ]] && echo /usr/local/go/bin/go; })}"
  if [[ -z "${go}" ]] || ! version="$("${go}" env GOVERSION 2>/dev/null)"; then
    local where="no go on PATH"
    [[ -z "${GO:-}" ]] || where="GO=${GO} does not run"
    need "Go >= ${required} (${where}), to build kube-apiserver, etcd and kubectl once: install it from https://go.dev/dl/ or set GO=/path/to/go"
    return
  fi
  version="${version#go}"
  if ! version_at_least "${version}" "${required}"; then
    need "Go >= ${required} (found ${version} at ${go}), as hack/testenv/go.mod requires: install it from https://go.dev/dl/ or set GO=/path/to/go"
    return
  fi
  check_disk
}

# version_at_least HAVE WANT: dotted numeric versions (a suffix such as rc1 is ignored).
version_at_least() {
  local -a have want
  IFS=. read -ra have <<<"${1%%[!0-9.]*}"
  IFS=. read -ra want <<<"${2%%[!0-9.]*}"
  local i
  for i in 0 1 2; do
    (( ${have[i]:-0} > ${want[i]:-0} )) && return 0
    (( ${have[i]:-0} < ${want[i]:-0} )) && return 1
  done
  return 0
}

free_mb() {  # free MB on the filesystem holding PATH (or its nearest existing parent)
  local path="$1"
  while [[ ! -e "${path}" ]]; do path="$(dirname "${path}")"; done
  df -Pm "${path}" 2>/dev/null | awk 'NR == 2 { print $4 }'
}

check_disk() {
  local cache="${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg" free
  free="$(free_mb "${cache}")"
  if [[ -n "${free}" ]] && (( free < BUILD_FREE_MB )); then
    need "${BUILD_FREE_MB} MB of free disk for the one-time control plane build (${free} MB free under ${cache}): free some space, or set XDG_CACHE_HOME (and GOCACHE, GOMODCACHE) to a larger disk"
  fi
}

check_crds() {
  local dir
  for dir in "${REPO_DIR}/config/crd" "${REPO_DIR}/testenv/crd"; do
    compgen -G "${dir}/*.yaml" >/dev/null || need "the project's CRDs in ${dir#"${REPO_DIR}/"}/: restore them with git checkout -- ${dir#"${REPO_DIR}/"}"
  done
  if [[ -n "${KUBECTL_DISAGG_CRDS:-}" && "${KUBECTL_DISAGG_CRDS}" != project && ! -d "${KUBECTL_DISAGG_CRDS}" ]]; then
    need "the upstream CRDs in KUBECTL_DISAGG_CRDS=${KUBECTL_DISAGG_CRDS} (not a directory): fix the path or unset it to use the project's CRDs"
  elif [[ "${TARGET}" == test && "${CI:-}" == true && -z "${KUBECTL_DISAGG_CRDS:-}" && ! -d "${REPO_DIR}/../shared/crds" ]]; then
    need "the upstream CRDs (CI=true runs the conformance tests against them): put them in ../shared/crds or set KUBECTL_DISAGG_CRDS"
  fi
}

case "${TARGET}" in
  unit) check_python ;;
  testenv) check_command make "apt-get install make"; check_go ;;
  demo | test)
    check_python
    check_command make "apt-get install make"
    check_command openssl "apt-get install openssl (it creates the control plane's certificates)"
    check_go
    check_crds
    ;;
  *) echo "usage: $0 demo|test|testenv|unit" >&2; exit 2 ;;
esac
exit "${missing}"

#!/usr/bin/env bash
# Mermaid from the npm registry, for the test that renders the pull request charts in headless
# Chromium as a reader's browser would (tests/unit/views/test_mermaid_browser.py).
#
#   hack/mermaid/install.sh          install (once per lock file) and print the directory
#   hack/mermaid/install.sh --dir    print the directory only (it may not exist yet)
#
# `npm ci` runs from package.json and package-lock.json here into
# ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-disagg/mermaid/<lock hash>/, never into the repository;
# the directory appears by renaming a complete install into place. Without npm it says so and
# exits 0: that test then skips, naming why.
set -euo pipefail

readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly ROOT="${XDG_CACHE_HOME:-${HOME}/.cache}/kubectl-disagg/mermaid"
hash="$(cat "${HERE}/package.json" "${HERE}/package-lock.json" | sha256sum | cut -c1-16)"
readonly DIR="${ROOT}/${hash}"

if [[ "${1:-}" == "--dir" ]]; then
  echo "${DIR}"
  exit 0
fi
if [[ -f "${DIR}/node_modules/mermaid/dist/mermaid.min.js" ]]; then
  echo "${DIR}"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "mermaid: npm not on PATH (apt-get install npm): the Mermaid browser test will skip" >&2
  exit 0
fi
mkdir -p "${ROOT}"
tmp="$(mktemp -d "${DIR}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
cp "${HERE}/package.json" "${HERE}/package-lock.json" "${tmp}/"
(cd "${tmp}" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
if ! mv -T "${tmp}" "${DIR}" 2>/dev/null; then
  [[ -f "${DIR}/node_modules/mermaid/dist/mermaid.min.js" ]] || { echo "mermaid: could not place ${DIR}" >&2; exit 1; }
fi
trap - EXIT
echo "${DIR}"

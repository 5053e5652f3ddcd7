#!/usr/bin/env bash
# CI's half of the browser tests (tests/unit/views/test_mermaid_browser.py, the dashboard's
# tests/unit/dashboard/test_browser.py and tests/integration/test_dashboard.py): Debian's Chromium
# and chromium-driver (Selenium drives it), and node with npm for hack/mermaid/install.sh,
# installed with apt-get when missing.
# Run as root on Debian (CI's machines); elsewhere install them by hand or let the test skip.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: missing ${missing[*]} and not root on a Debian machine: install them by hand" >&2
  exit 1
fi
echo "install-browser: apt-get install ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

#!/usr/bin/env bash
# CI's half of the analysis tests (tests/unit/core/delivery/test_promql.py, tests/integration/test_analysis.py):
# Debian's prometheus package (the server and promtool, 2.42 on Debian 12), installed with apt-get
# when missing. Run as root on Debian (CI's machines); elsewhere install it by hand or let the
# tests skip, naming what is missing.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-prometheus: missing prometheus and not root on a Debian machine: install it by hand" >&2
  exit 1
fi
echo "install-prometheus: apt-get install prometheus" >&2
apt-get update -qq
# The package enables a systemd unit; the tests start their own server on a free port instead.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null

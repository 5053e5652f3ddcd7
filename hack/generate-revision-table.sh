#!/usr/bin/env bash
# Regenerates the revision type table (kubectl_disagg/data/revision-table.json) from k8s.io/api,
# pinned in hack/revision/go.mod. Usage: hack/generate-revision-table.sh [OUTPUT]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
output="${1:-$root/kubectl_disagg/data/revision-table.json}"
cd "$root/hack/revision"
go run ./cmd/revision-table > "$output.tmp"
mv "$output.tmp" "$output"

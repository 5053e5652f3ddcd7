#!/usr/bin/env bash
# A local stand-in for Argo CD's sync of one application directory, for trying git rollouts
# without Argo CD (make demo-git, docs/tutorials/git-rollout.md). Run from inside the repository:
#
#   hack/gitops-sync.sh APP_DIR NAMESPACE
#
# It does what Argo CD does with the config management plugin: renders the committed tree
# (HEAD, not the working tree) with `kubectl disagg cmp generate`, with the environment Argo CD
# gives the plugin (KUBE_API_VERSIONS naming the RolloutState kind, so the state is emitted
# beside the LeaderWorkerSets; ARGOCD_APP_REVISION), and applies the result server-side with
# pruning: what the commit no longer renders is deleted. Pruning uses an ApplySet (a Secret
# APP-sync in NAMESPACE records what was applied; KUBECTL_APPLYSET=true, kubectl >= 1.27): kubectl
# refuses the older `--prune -l SELECTOR` with --server-side, and -l would also leave out the
# RolloutState, which carries no label.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 APP_DIR NAMESPACE" >&2
  exit 2
fi
app_dir=${1%/} namespace=$2
top=$(git rev-parse --show-toplevel)
prefix=$(git rev-parse --show-prefix)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git -C "$top" archive HEAD -- "${prefix}${app_dir}" | tar -x -C "$tree"

export KUBE_API_VERSIONS=leaderworkerset.x-k8s.io/v1/LeaderWorkerSet,kubectl-disagg.x-k8s.io/v1alpha1/RolloutState
ARGOCD_APP_REVISION=$(git rev-parse HEAD)
export ARGOCD_APP_REVISION
(cd "$tree/${prefix}${app_dir}" && kubectl disagg cmp generate) |
  KUBECTL_APPLYSET=true kubectl apply --server-side --prune --applyset="$(basename "$app_dir")-sync" \
    -n "$namespace" -f -

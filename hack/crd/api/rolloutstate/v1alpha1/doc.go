// Package v1alpha1 declares kubectl-disagg's own kinds (kubectl-disagg.x-k8s.io/v1alpha1):
// RolloutPolicy (rolloutpolicy.go), which paces a set's rollouts across its slices, and
// RolloutState, the position of a DisaggregatedSet's git-driven rollout, the document kept in git beside the set
// (docs/gitops.md), served so Argo CD can apply it with the set's LeaderWorkerSets and show
// where the rollout stands. kubectl-disagg's own API, with no upstream counterpart. Written for
// this project from kubectl_disagg/gitops/state.py; controller-gen turns it into config/crd
// (hack/generate-crds.sh).
//
// +groupName=kubectl-disagg.x-k8s.io
// +versionName=v1alpha1
package v1alpha1

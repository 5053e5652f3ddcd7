// Package v1 declares the DisaggregatedSet API (disaggregatedset.x-k8s.io/v1) kubectl-disagg reads:
// DisaggregatedSet and DisaggregatedSetRoleScaler, with the defaults of the API (so what the API
// server stores is what kubectl-disagg hashes and renders) and, as CEL rules, the checks that span
// fields. Written for this project from the API reference and the project's spec; controller-gen
// turns it into config/crd (hack/generate-crds.sh).
//
// +groupName=disaggregatedset.x-k8s.io
// +versionName=v1
package v1

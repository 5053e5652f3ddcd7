// Package lws names what the DisaggregatedSet controller hashes: the list of role templates
// ComputeRevision marshals, over the project's LeaderWorkerSet types (hack/crd, the same Go
// types its CRDs are generated from).
package lws

import (
	lwsv1 "kubectl-disagg/hack/crd/api/leaderworkerset/v1"
)

// LeaderWorkerTemplate is the LWS template a role carries.
type LeaderWorkerTemplate = lwsv1.LeaderWorkerTemplate

// RoleTemplate is one element of the list ComputeRevision marshals: the role's name and its
// LeaderWorkerTemplate, in spec order.
type RoleTemplate struct {
	Name     string               `json:"name"`
	Template LeaderWorkerTemplate `json:"template"`
}

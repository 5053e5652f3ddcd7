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
	Name string `json:"name"`
	// The role's groupIdentity (lws#987) with Ordinal written as "" (see NormalGroupIdentity).
	GroupIdentity lwsv1.GroupIdentityType `json:"groupIdentity,omitempty"`
	Template      LeaderWorkerTemplate    `json:"template"`
}

// NormalGroupIdentity is the groupIdentity the revision hashes: Ordinal, the API's default, as
// empty, so defaulting the field on read changes no revision.
func NormalGroupIdentity(identity lwsv1.GroupIdentityType) lwsv1.GroupIdentityType {
	if identity == "Ordinal" {
		return ""
	}
	return identity
}

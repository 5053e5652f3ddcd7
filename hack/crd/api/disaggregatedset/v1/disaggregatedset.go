package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lwsv1 "kubectl-disagg/hack/crd/api/leaderworkerset/v1"
)

// A DisaggregatedSet runs the roles of disaggregated LLM inference (prefill, decode, encode, ...)
// as coordinated LeaderWorkerSets: one per slice, revision and role, each with a headless Service.
// kubectl-disagg renders it and rolls a template change out across the roles in lockstep, so the
// ratio of the roles holds in every slice; no controller has to run.
//
// metadata.name prefixes every generated LeaderWorkerSet and Service name, so it must be a
// DNS-1035 label, and the longest generated name (the Service <name>-<slice>-<revision>-<role>-prv)
// must fit in 63 characters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="app.kubernetes.io/part-of=kubectl-disagg"
// +kubebuilder:printcolumn:name="Slices",type=integer,JSONPath=`.spec.slices`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.metadata.name) || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name prefixes the generated LeaderWorkerSet and Service names, so it must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter)"
// +kubebuilder:validation:XValidation:rule="!has(self.metadata.name) || self.spec.roles.all(r, size(self.metadata.name) + size(r.name) + (self.spec.slices > 10 ? 2 : 1) + 15 <= 63)",message="a generated Service name (<name>-<slice>-<revision>-<role>-prv) would exceed 63 characters: shorten metadata.name or the role names"
type DisaggregatedSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The roles, their LeaderWorkerSet templates and how many copies (slices) of the whole
	// topology run.
	// +required
	Spec DisaggregatedSetSpec `json:"spec"`

	// Derived from the roles' LeaderWorkerSets. Only the upstream controller writes it;
	// kubectl-disagg never stores it (`kubectl disagg rollout status` derives the same shape), and
	// reads a written status as a sign that a controller runs the set.
	// +optional
	Status DisaggregatedSetStatus `json:"status,omitempty"`
}

// DisaggregatedSetList is a list of DisaggregatedSets.
//
// +kubebuilder:object:root=true
type DisaggregatedSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DisaggregatedSet `json:"items"`
}

// DisaggregatedSetSpec is the desired state of a DisaggregatedSet: its roles, its slices and
// where their pods go. Only the roles' templates and names make the revision: changing replicas,
// slices, rollout strategy, placement or metadata scales or relabels, never rolls out.
//
// +kubebuilder:validation:XValidation:rule="self.roles.filter(r, !has(r.scaling) || r.scaling.mode != 'External').all(r, r.spec.replicas == 0) || self.roles.filter(r, !has(r.scaling) || r.scaling.mode != 'External').all(r, r.spec.replicas > 0)",message="replicas must be zero for all non-External roles (a paused set) or non-zero for all of them"
// +kubebuilder:validation:XValidation:rule="self.slices <= 1 || self.roles.all(r, !has(r.scaling) || r.scaling.mode != 'External')",message="External scaling cannot be combined with slices > 1"
// +kubebuilder:validation:XValidation:rule="!has(self.placementPolicy) || self.placementPolicy.type == 'None' || self.roles.all(r, (!has(r.metadata) || !has(r.metadata.annotations) || (!('leaderworkerset.sigs.k8s.io/exclusive-topology' in r.metadata.annotations) && !('leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology' in r.metadata.annotations))) && (!has(r.spec.leaderWorkerTemplate.workerTemplate.metadata) || !has(r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations) || (!('leaderworkerset.sigs.k8s.io/exclusive-topology' in r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations) && !('leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology' in r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations))) && (!has(r.spec.leaderWorkerTemplate.leaderTemplate) || !has(r.spec.leaderWorkerTemplate.leaderTemplate.metadata) || !has(r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations) || (!('leaderworkerset.sigs.k8s.io/exclusive-topology' in r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations) && !('leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology' in r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations))))",message="a placementPolicy other than None cannot be combined with the LWS annotations leaderworkerset.sigs.k8s.io/exclusive-topology or subgroup-exclusive-topology (on a role's metadata or on its pod templates)"
type DisaggregatedSetSpec struct {
	// Independent copies of the whole role topology, numbered from 0 (1 to 100, default 1). Each
	// slice has its own LeaderWorkerSets and rolls out on its own; changing this scales, never
	// rolls out.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Slices *int32 `json:"slices,omitempty"`

	// How the pods of a slice are packed into, and spread across, topology domains (nodes,
	// racks, zones). Absent: type None, no placement constraint.
	// +optional
	PlacementPolicy *PlacementPolicy `json:"placementPolicy,omitempty"`

	// The roles, 2 to 10, each with a unique name and its own LeaderWorkerSet template. Their
	// replicas are all zero (a paused set) or all above zero, but for roles an autoscaler sizes.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=10
	Roles []DisaggregatedRoleSpec `json:"roles"`
}

// PlacementPolicy packs a slice's pods into topology domains.
// It cannot be combined with the LeaderWorkerSet annotations
// leaderworkerset.sigs.k8s.io/exclusive-topology and subgroup-exclusive-topology.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'None' || (has(self.topology) && size(self.topology) > 0)",message="topology (a node label key) is required unless type is None"
type PlacementPolicy struct {
	// None (the default: no constraint), ExclusiveSlice (every pod of a slice in one domain, which
	// no other slice of this set shares) or ExclusiveTopology (every pod of a slice in one domain,
	// which no slice of any other set shares either).
	// +optional
	// +kubebuilder:default=None
	// +kubebuilder:validation:Enum=None;ExclusiveSlice;ExclusiveTopology
	Type PlacementType `json:"type,omitempty"`

	// The node label key whose values are the topology domains, e.g. topology.kubernetes.io/zone.
	// Required unless type is None.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	Topology string `json:"topology,omitempty"`
}

// The CEL rules below spell no empty string literal: gofmt would turn two single quotes into a
// typographic one.

// DisaggregatedRoleSpec is one role: a name, who sets its replicas, and the LeaderWorkerSet
// template of its groups. Rollouts across roles are the DisaggregatedSet's, so the role's own
// rollout partition must stay 0, and its maxSurge and maxUnavailable must not both resolve to 0.
//
// +kubebuilder:validation:XValidation:rule="!has(self.spec.rolloutStrategy) || !has(self.spec.rolloutStrategy.rollingUpdateConfiguration) || !has(self.spec.rolloutStrategy.rollingUpdateConfiguration.partition) || self.spec.rolloutStrategy.rollingUpdateConfiguration.partition == 0",message="partition must not be set; the DisaggregatedSet coordinates rollouts across roles",fieldPath=".spec.rolloutStrategy.rollingUpdateConfiguration.partition"
// +kubebuilder:validation:XValidation:rule="self.spec.replicas == 0 || !has(self.spec.rolloutStrategy) || !has(self.spec.rolloutStrategy.rollingUpdateConfiguration) || (type(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge) == int ? self.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge > 0 : int(string(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge).split('%')[0]) > 0) || (type(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable) == int ? self.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable > 0 : int(string(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable).split('%')[0]) * self.spec.replicas >= 100)",message="maxSurge and maxUnavailable must not both be 0 once resolved against the role's replicas (surge rounds up, unavailable rounds down)",fieldPath=".spec.rolloutStrategy.rollingUpdateConfiguration"
type DisaggregatedRoleSpec struct {
	// The role's name, unique in the set: a DNS label (lower-case letters, digits and '-'), part
	// of every name generated for the role, and the value of its disaggregatedset.x-k8s.io/role label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Who sets the role's replicas. Absent: mode Static.
	// +optional
	Scaling *RoleScaling `json:"scaling,omitempty"`

	// The role's LeaderWorkerSet: metadata copied onto it, and its spec, whose replicas count
	// groups per slice. (Inlined: metadata and spec are fields of the role.)
	lwsv1.LeaderWorkerSetTemplateSpec `json:",inline"`
}

// RoleScaling says who owns a role's replicas.
type RoleScaling struct {
	// Static (the default: replicas come from the role's spec) or External (an autoscaler owns
	// them, through the DisaggregatedSetRoleScaler <set>-<role> and its scale subresource; the
	// rendered LeaderWorkerSets carry no replicas). External cannot be combined with slices > 1.
	// +optional
	// +kubebuilder:default=Static
	// +kubebuilder:validation:Enum=Static;External
	Mode RoleScalingMode `json:"mode,omitempty"`
}

// DisaggregatedSetStatus is derived from the roles' LeaderWorkerSets, counted over every slice.
type DisaggregatedSetStatus struct {
	// The metadata.generation of the set this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// One entry per role, in spec order.
	// +optional
	// +listType=map
	// +listMapKey=name
	RoleStatuses []RoleStatus `json:"roleStatuses,omitempty"`

	// Available (every role has LeaderWorkerSets that serve) and Progressing (a rollout or a
	// scale is under way), with the reason and message of each.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RoleStatus counts one role's groups over every slice.
type RoleStatus struct {
	// The role's name, as in spec.roles.
	// +required
	Name string `json:"name"`

	// The role's groups (leader and workers) that exist, in every slice and revision.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// The role's groups whose pods are all ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// The role's groups of the set's current revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
}

type (
	PlacementType   string
	RoleScalingMode string
)

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lwsv1 "kubectl-disagg/hack/crd/api/leaderworkerset/v1"
)

// A set of LLM inference roles (prefill, decode, ...) run as coordinated LeaderWorkerSets.
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

	// The roles and how many copies of them run.
	// +required
	Spec DisaggregatedSetSpec `json:"spec"`

	// Derived from the roles' LeaderWorkerSets (kubectl disagg rollout status prints the same shape).
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

// DisaggregatedSetSpec is the desired state of a DisaggregatedSet.
//
// +kubebuilder:validation:XValidation:rule="self.roles.filter(r, !has(r.scaling) || r.scaling.mode != 'External').all(r, r.spec.replicas == 0) || self.roles.filter(r, !has(r.scaling) || r.scaling.mode != 'External').all(r, r.spec.replicas > 0)",message="replicas must be zero for all non-External roles (a paused set) or non-zero for all of them"
// +kubebuilder:validation:XValidation:rule="self.slices <= 1 || self.roles.all(r, !has(r.scaling) || r.scaling.mode != 'External')",message="External scaling cannot be combined with slices > 1"
// +kubebuilder:validation:XValidation:rule="!has(self.placementPolicy) || self.placementPolicy.type == 'None' || self.roles.all(r, (!has(r.metadata) || !has(r.metadata.annotations) || (!('leaderworkerset.sigs.k8s.io/exclusive-topology' in r.metadata.annotations) && !('leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology' in r.metadata.annotations))) && (!has(r.spec.leaderWorkerTemplate.workerTemplate.metadata) || !has(r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations) || (!('leaderworkerset.sigs.k8s.io/exclusive-topology' in r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations) && !('leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology' in r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations))) && (!has(r.spec.leaderWorkerTemplate.leaderTemplate) || !has(r.spec.leaderWorkerTemplate.leaderTemplate.metadata) || !has(r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations) || (!('leaderworkerset.sigs.k8s.io/exclusive-topology' in r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations) && !('leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology' in r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations))))",message="a placementPolicy other than None cannot be combined with the LWS annotations leaderworkerset.sigs.k8s.io/exclusive-topology or subgroup-exclusive-topology (on a role's metadata or on its pod templates)"
type DisaggregatedSetSpec struct {
	// Independent copies of the whole role topology; changing it scales, never rolls out.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Slices *int32 `json:"slices,omitempty"`

	// How the pods of a slice are packed into, and spread across, topology domains.
	// +optional
	PlacementPolicy *PlacementPolicy `json:"placementPolicy,omitempty"`

	// The roles, at least 2, each with its own LeaderWorkerSet spec.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=10
	Roles []DisaggregatedRoleSpec `json:"roles"`
}

// PlacementPolicy packs a slice's pods into topology domains.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'None' || (has(self.topology) && size(self.topology) > 0)",message="topology (a node label key) is required unless type is None"
type PlacementPolicy struct {
	// None, ExclusiveSlice (one slice per domain of the set) or ExclusiveTopology (one slice per
	// domain across all sets).
	// +optional
	// +kubebuilder:default=None
	// +kubebuilder:validation:Enum=None;ExclusiveSlice;ExclusiveTopology
	Type PlacementType `json:"type,omitempty"`

	// Node label key of the topology domain, e.g. topology.kubernetes.io/zone.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	Topology string `json:"topology,omitempty"`
}

// DisaggregatedRoleSpec is one role: a name and the LeaderWorkerSet template of its groups.
// Rollouts across roles are the DisaggregatedSet's, so a role's own LWS rollout partition must
// stay 0, and its surge and unavailability must leave room to make progress. (The rules spell no
// empty string literal: gofmt would turn two single quotes into a typographic one.)
//
// +kubebuilder:validation:XValidation:rule="!has(self.spec.rolloutStrategy) || !has(self.spec.rolloutStrategy.rollingUpdateConfiguration) || !has(self.spec.rolloutStrategy.rollingUpdateConfiguration.partition) || self.spec.rolloutStrategy.rollingUpdateConfiguration.partition == 0",message="partition must not be set; the DisaggregatedSet coordinates rollouts across roles",fieldPath=".spec.rolloutStrategy.rollingUpdateConfiguration.partition"
// +kubebuilder:validation:XValidation:rule="self.spec.replicas == 0 || !has(self.spec.rolloutStrategy) || !has(self.spec.rolloutStrategy.rollingUpdateConfiguration) || (type(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge) == int ? self.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge > 0 : int(string(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge).split('%')[0]) > 0) || (type(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable) == int ? self.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable > 0 : int(string(self.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable).split('%')[0]) * self.spec.replicas >= 100)",message="maxSurge and maxUnavailable must not both be 0 once resolved against the role's replicas (surge rounds up, unavailable rounds down)",fieldPath=".spec.rolloutStrategy.rollingUpdateConfiguration"
type DisaggregatedRoleSpec struct {
	// Unique role name, a DNS label; part of every generated name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Who sets the role's replicas.
	// +optional
	Scaling *RoleScaling `json:"scaling,omitempty"`

	// The role's LeaderWorkerSet: metadata copied onto it, and its spec, whose replicas count
	// groups per slice.
	lwsv1.LeaderWorkerSetTemplateSpec `json:",inline"`
}

// RoleScaling says who owns a role's replicas.
type RoleScaling struct {
	// Static (replicas from the spec) or External (an autoscaler owns replicas through a
	// DisaggregatedSetRoleScaler).
	// +optional
	// +kubebuilder:default=Static
	// +kubebuilder:validation:Enum=Static;External
	Mode RoleScalingMode `json:"mode,omitempty"`
}

// DisaggregatedSetStatus is derived from the roles' LeaderWorkerSets.
type DisaggregatedSetStatus struct {
	// The generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// One entry per role, in spec order.
	// +optional
	// +listType=map
	// +listMapKey=name
	RoleStatuses []RoleStatus `json:"roleStatuses,omitempty"`

	// Available, Progressing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RoleStatus counts one role's groups over every slice.
type RoleStatus struct {
	// The role's name.
	// +required
	Name string `json:"name"`

	// Groups that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Groups whose pods are all ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Groups of the current revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
}

type (
	PlacementType   string
	RoleScalingMode string
)

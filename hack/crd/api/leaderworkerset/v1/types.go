package v1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LeaderWorkerSet runs groups of pods (one leader, size-1 workers) as a unit.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName=lws
// +kubebuilder:metadata:labels="app.kubernetes.io/part-of=kubectl-disagg-testenv"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LeaderWorkerSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The groups, their pod templates and how a template change replaces them.
	Spec LeaderWorkerSetSpec `json:"spec,omitempty"`

	// What the LeaderWorkerSet controller observed.
	Status LeaderWorkerSetStatus `json:"status,omitempty"`
}

// LeaderWorkerSetList is a list of LeaderWorkerSets.
//
// +kubebuilder:object:root=true
type LeaderWorkerSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LeaderWorkerSet `json:"items"`
}

// LeaderWorkerSetTemplateSpec is an LWS's metadata and spec, as a DisaggregatedSet role embeds it.
type LeaderWorkerSetTemplateSpec struct {
	// Labels and annotations copied onto the role's LeaderWorkerSets (besides the labels
	// kubectl-disagg sets).
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The spec of the role's LeaderWorkerSets, one per slice and revision: replicas counts the
	// role's groups in each slice, and the templates make the set's revision.
	// +required
	Spec LeaderWorkerSetSpec `json:"spec"`
}

// LeaderWorkerSetSpec is the desired state of a LeaderWorkerSet.
type LeaderWorkerSetSpec struct {
	// Number of groups (a leader and its workers each); default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Replicas *int32 `json:"replicas,omitempty"`

	// The pod templates of a group and how many pods it has.
	LeaderWorkerTemplate LeaderWorkerTemplate `json:"leaderWorkerTemplate"`

	// How a change of the templates replaces groups.
	// +optional
	RolloutStrategy RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// Whether workers are created with their leader or once it is ready.
	// +optional
	// +kubebuilder:default=LeaderCreated
	// +kubebuilder:validation:Enum=LeaderCreated;LeaderReady
	StartupPolicy StartupPolicyType `json:"startupPolicy"`

	// The headless Service's subdomain layout.
	// +optional
	NetworkConfig *NetworkConfig `json:"networkConfig,omitempty"`

	// How groups are named: Ordinal (leaders in a StatefulSet, groups 0..N-1; what absent means)
	// or Hash (leaders in a Deployment, hash-named groups), as LWS adds it in lws#987. The
	// revision hashes absent and Ordinal alike. Not defaulted here, so stored sets stay as written.
	// +optional
	// +kubebuilder:validation:Enum=Ordinal;Hash
	GroupIdentity GroupIdentityType `json:"groupIdentity,omitempty"`
}

// GroupIdentityType is how an LWS names its groups.
type GroupIdentityType string

// LeaderWorkerTemplate describes one group.
type LeaderWorkerTemplate struct {
	// The leader's pod template; the worker template when absent.
	// +optional
	LeaderTemplate *corev1.PodTemplateSpec `json:"leaderTemplate,omitempty"`

	// The workers' pod template.
	WorkerTemplate corev1.PodTemplateSpec `json:"workerTemplate"`

	// Pods per group, the leader included.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Size *int32 `json:"size,omitempty"`

	// What happens to a group when one of its pods restarts.
	// +optional
	// +kubebuilder:default=RecreateGroupOnPodRestart
	// +kubebuilder:validation:Enum=Default;RecreateGroupOnPodRestart;RecreateGroupAfterStart;None
	RestartPolicy RestartPolicyType `json:"restartPolicy,omitempty"`

	// How a group is divided into subgroups.
	// +optional
	SubGroupPolicy *SubGroupPolicy `json:"subGroupPolicy,omitempty"`

	// Claims every pod of a group gets, as a StatefulSet's.
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// Whether those claims are kept when groups are deleted or scaled away.
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
}

// RolloutStrategy says how groups are replaced.
type RolloutStrategy struct {
	// RollingUpdate, the only strategy.
	// +kubebuilder:default=RollingUpdate
	// +kubebuilder:validation:Enum=RollingUpdate
	Type RolloutStrategyType `json:"type"`

	// Bounds of a rolling update.
	// +optional
	RollingUpdateConfiguration *RollingUpdateConfiguration `json:"rollingUpdateConfiguration,omitempty"`
}

// RollingUpdateConfiguration bounds a rolling update.
type RollingUpdateConfiguration struct {
	// Groups with an ordinal below it keep the old templates.
	// +optional
	// +kubebuilder:default=0
	Partition *int32 `json:"partition,omitempty"`

	// Groups that may be unavailable during the update: a count or a percentage of replicas,
	// rounded down. "100%" is the longest value, which also bounds the cost of the rules that read it.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : string(self).matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer or a percentage from 0% to 100%"
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Groups that may exist above replicas during the update: a count or a percentage of
	// replicas, rounded up.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : string(self).matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer or a percentage from 0% to 100%"
	MaxSurge intstr.IntOrString `json:"maxSurge,omitempty"`
}

// SubGroupPolicy divides a group into subgroups.
type SubGroupPolicy struct {
	// Whether the leader belongs to the first subgroup.
	// +optional
	// +kubebuilder:default=LeaderWorker
	// +kubebuilder:validation:Enum=LeaderWorker;LeaderExcluded
	Type *SubGroupPolicyType `json:"subGroupPolicyType,omitempty"`

	// Pods per subgroup.
	// +optional
	// +kubebuilder:validation:Minimum=1
	SubGroupSize *int32 `json:"subGroupSize,omitempty"`
}

// NetworkConfig is the headless Service's subdomain layout.
type NetworkConfig struct {
	// One subdomain for all groups, or one per group.
	// +kubebuilder:validation:Enum=Shared;UniquePerReplica
	SubdomainPolicy *SubdomainPolicy `json:"subdomainPolicy"`
}

// LeaderWorkerSetStatus is what the LWS controller observed.
type LeaderWorkerSetStatus struct {
	// The latest observations of the set's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Groups whose pods are all ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Groups on the current templates.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// Groups that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Label selector of the leader pods, for the horizontal pod autoscaler.
	// +optional
	HPAPodSelector string `json:"hpaPodSelector,omitempty"`

	// The generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

type (
	StartupPolicyType   string
	RestartPolicyType   string
	RolloutStrategyType string
	SubGroupPolicyType  string
	SubdomainPolicy     string
)

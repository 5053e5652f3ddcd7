package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubectl-disagg checks a policy offline (kubectl_disagg/core/policy.py, design §9); this schema
// refuses what a policy can never be.

// RolloutPolicy paces a DisaggregatedSet's rollouts across its slices: waves of slices in index
// order (slice 0 is the canary), a budget of slices in flight, and gates after a wave (analysis,
// then a pause). Inside a slice every step is the same as without a policy. Every `-f` command
// reads it from the set's file or directory; for a set named from the cluster it is read from
// there. Its position (waves reached, gates passed) is kept in the set's RolloutState.
//
// +kubebuilder:object:root=true
// +kubebuilder:metadata:labels="app.kubernetes.io/part-of=kubectl-disagg"
// +kubebuilder:printcolumn:name="Set",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="In-Flight",type=string,JSONPath=`.spec.maxSlicesInFlight`
// +kubebuilder:printcolumn:name="On-Failure",type=string,JSONPath=`.spec.onFailure`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Which set the policy paces, its waves and gates, and what a failed check does.
	// +required
	Spec RolloutPolicySpec `json:"spec"`
}

// RolloutPolicyList is a list of RolloutPolicies.
//
// +kubebuilder:object:root=true
type RolloutPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutPolicy `json:"items"`
}

// RolloutPolicySpec is which slices of the set move, and when.
type RolloutPolicySpec struct {
	// The DisaggregatedSet (in the policy's namespace) this policy paces; at most one policy per set.
	// +required
	TargetRef TargetRef `json:"targetRef"`

	// At most this many slices between their rollout's start and its completion at once: a count
	// (at least 1) or a percentage of the set's slices ("10%"), rounded up. A slice leaves the
	// budget once it runs the new revision alone. Absent: no limit.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="must be at least 1 or a percentage from 1% to 100%"
	MaxSlicesInFlight *intstr.IntOrString `json:"maxSlicesInFlight,omitempty"`

	// The waves, in order: each names how many slices (cumulative, strictly increasing, in slice
	// index order) the rollout has reached once it is done, and the gates that hold the next wave.
	// A last wave of 100% is implied. Absent: one wave of every slice.
	// Example: [{slices: 1, pause: {}}, {slices: "25%", pause: {duration: 15m}}, {slices: "50%"}].
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Waves []Wave `json:"waves,omitempty"`

	// The analysis checks that waves name in their analysis gates: where Prometheus is
	// (prometheus: {address} or {service: {namespace, name, port}}) and checks, each a name, the
	// role it judges, a PromQL query over the new revision's metrics, a successCondition such as
	// "< 0.5", and how often and how many times it is measured (interval, count, failureLimit,
	// noData). kubectl-disagg checks its contents; docs/analysis.md describes them.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Analysis *runtime.RawExtension `json:"analysis,omitempty"`

	// What a failed analysis check does: abort (the default: roll every started slice back to the
	// stable revision) or pause (hold the rollout until `kubectl disagg rollout resume`).
	// +optional
	// +kubebuilder:default=abort
	// +kubebuilder:validation:Enum=abort;pause
	OnFailure string `json:"onFailure,omitempty"`
}

// TargetRef names the DisaggregatedSet.
type TargetRef struct {
	// The DisaggregatedSet's metadata.name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Wave is the slices a rollout has reached once the wave is done, and the gates that follow it
// (analysis first, then the pause).
type Wave struct {
	// Cumulative: the slices 0 to N-1 where N is a count (at least 1) or a percentage of the set's
	// slices ("25%"), rounded up; more than the wave before.
	// +required
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="must be at least 1 or a percentage from 1% to 100%"
	Slices intstr.IntOrString `json:"slices"`

	// Names of spec.analysis.checks that must pass, measured once the wave's slices completed,
	// before the next wave starts.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Analysis []string `json:"analysis,omitempty"`

	// A gate after the wave: {} holds until `kubectl disagg rollout promote`; {duration: 15m}
	// passes on its own 15 minutes after the wave completed (a soak).
	// +optional
	Pause *Pause `json:"pause,omitempty"`
}

// Pause is a gate after a wave, passed by time or by hand.
type Pause struct {
	// How long after the wave's last slice completed the gate passes on its own, as Go spells a
	// duration (15m, 1h30m). Absent: the gate holds until `kubectl disagg rollout promote`.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Duration string `json:"duration,omitempty"`
}

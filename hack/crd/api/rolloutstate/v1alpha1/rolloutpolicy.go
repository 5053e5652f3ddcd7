package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RolloutPolicy paces a DisaggregatedSet's rollouts across its slices (design §9): waves of slices
// in index order (slice 0 is the canary), a budget of slices in flight, and gates after a wave
// (analysis, then a pause). Inside a slice every step is the controller's. Read beside the set by
// every `-f` command and from the cluster for `NAME`; kubectl-disagg checks it offline
// (kubectl_disagg/core/policy.py), and this schema refuses what a policy can never be.
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

// RolloutPolicySpec is which slices move and when.
type RolloutPolicySpec struct {
	// The DisaggregatedSet (in the policy's namespace) this policy paces; at most one policy per set.
	// +required
	TargetRef TargetRef `json:"targetRef"`

	// At most this many slices between their rollout's start and its completion at once: a count
	// (at least 1) or a percentage of the set's slices, rounded up. Absent: no limit.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="must be at least 1 or a percentage from 1% to 100%"
	MaxSlicesInFlight *intstr.IntOrString `json:"maxSlicesInFlight,omitempty"`

	// Cumulative, strictly increasing slice counts or percentages, in slice index order; a last
	// wave of 100% is implied.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Waves []Wave `json:"waves,omitempty"`

	// The checks waves name (issue 33: Prometheus queries and their success conditions).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Analysis *runtime.RawExtension `json:"analysis,omitempty"`

	// What a failed check does: abort (roll the admitted slices back) or pause.
	// +optional
	// +kubebuilder:default=abort
	// +kubebuilder:validation:Enum=abort;pause
	OnFailure string `json:"onFailure,omitempty"`
}

// TargetRef names the DisaggregatedSet.
type TargetRef struct {
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Wave is the slices a rollout has reached after it, and the gates that follow it.
type Wave struct {
	// Cumulative: a count (at least 1) or a percentage of the set's slices, rounded up.
	// +required
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="must be at least 1 or a percentage from 1% to 100%"
	Slices intstr.IntOrString `json:"slices"`

	// Names of spec.analysis.checks that must pass before the next wave starts.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Analysis []string `json:"analysis,omitempty"`

	// {} holds until `kubectl disagg rollout promote`; {duration: 15m} is a soak after the wave completed.
	// +optional
	Pause *Pause `json:"pause,omitempty"`
}

// Pause is a gate after a wave.
type Pause struct {
	// How long after the wave's last slice completed the gate passes on its own (e.g. 15m).
	// Absent: until promoted.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Duration string `json:"duration,omitempty"`
}

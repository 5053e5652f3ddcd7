package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The replicas of one External role of a DisaggregatedSet, exposed through the scale
// subresource: the scale target an autoscaler (HPA, KEDA) drives. Named <set>-<role>, in the
// set's namespace; `kubectl disagg rollout step` creates it, seeded with the role's replicas,
// and sizes the role's LeaderWorkerSets from it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=dsrs
// +kubebuilder:metadata:labels="app.kubernetes.io/part-of=kubectl-disagg"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DisaggregatedSetRoleScaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The replicas the autoscaler wants for the role.
	// +required
	Spec DisaggregatedSetRoleScalerSpec `json:"spec"`

	// What the role has, and the selector of its pods.
	// +optional
	Status DisaggregatedSetRoleScalerStatus `json:"status,omitempty"`
}

// DisaggregatedSetRoleScalerList is a list of DisaggregatedSetRoleScalers.
//
// +kubebuilder:object:root=true
type DisaggregatedSetRoleScalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DisaggregatedSetRoleScaler `json:"items"`
}

// DisaggregatedSetRoleScalerSpec is the autoscaler's side.
type DisaggregatedSetRoleScalerSpec struct {
	// Desired groups of the role in its slice (External roles have one slice).
	// +required
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// DisaggregatedSetRoleScalerStatus is the role's side.
type DisaggregatedSetRoleScalerStatus struct {
	// The metadata.generation of the scaler this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Groups (leader and workers) the role has.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Label selector of the role's pods, for the autoscaler's metrics.
	// +optional
	Selector string `json:"selector,omitempty"`

	// The latest observations of the scaler's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

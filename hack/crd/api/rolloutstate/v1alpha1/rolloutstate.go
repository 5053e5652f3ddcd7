package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The records are open (unknown fields kept): a newer formatVersion may record more of a
// revision or a slice, and the plugin, not this schema, checks the format it reads.

// The rollout state of one DisaggregatedSet (named after it, in its namespace): per slice, the
// revisions deployed and their replicas, a record of every revision those slices run, and where a
// RolloutPolicy's rollout stands. Through git it is the file beside the set
// (disagg-rollout-state.yaml), written by `kubectl disagg rollout step --gitops` and read by
// `render`; `cmp generate` serves it with the `rollout` summary that the columns and Argo CD's
// health check read. In the cluster, `rollout step` keeps a paced rollout's position in it. The
// fields sit at the top level, as in the file: the object is that document, not a desired
// state with a status.
//
// +kubebuilder:object:root=true
// +kubebuilder:metadata:labels="app.kubernetes.io/part-of=kubectl-disagg"
// +kubebuilder:printcolumn:name="Set",type=string,JSONPath=`.rollout.set`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.rollout.revision`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.rollout.step`
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.rollout.wave`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.rollout.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The version of the document's format; kubectl-disagg refuses one newer than it reads.
	// +required
	// +kubebuilder:validation:Minimum=1
	FormatVersion int64 `json:"formatVersion"`

	// The set as the last step saw it: what that step was decided for, and what render replays
	// it with (formatVersion 2).
	// +optional
	Target *Target `json:"target,omitempty"`

	// How many step commits have been written toward the target's revision so far: each pull
	// request is numbered over the whole rollout (0 or absent: none counted yet).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Commits int64 `json:"commits,omitempty"`

	// One record per revision some slice runs: what that revision puts into its LeaderWorkerSets.
	// +required
	Revisions []RevisionRecord `json:"revisions"`

	// One entry per slice: the revisions deployed there and their replicas.
	// +required
	Slices []SliceState `json:"slices"`

	// Where a RolloutPolicy's rollout stands: the waves reached (and when each completed), the
	// gates passed (when, by whom and how), whether it is paused, aborted or retried (who, when,
	// and the --reason given), and the analysis verdicts. Written by `rollout step` and by
	// `rollout promote|pause|resume|abort|retry`, in the cluster or, with --gitops, in the file.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Position *runtime.RawExtension `json:"position,omitempty"`

	// Where the rollout stands, for people and Argo CD: written by `cmp generate` from the fields
	// above.
	// +optional
	Rollout *RolloutSummary `json:"rollout,omitempty"`

	// In the cluster: how many entries `history` keeps (10 when unset); the oldest go first.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// In the cluster: the revisions the set has run, oldest first, as `rollout step` and the
	// verbs recorded them; read by `rollout history` and `rollout undo`. Through git the history
	// is the commits of the set's file and of this file.
	// +optional
	History []HistoryEntry `json:"history,omitempty"`
}

// HistoryEntry is one revision a set ran: when and by whom its rollout started, how it ended,
// and its roles' templates as the set's document wrote them.
//
// +kubebuilder:pruning:PreserveUnknownFields
type HistoryEntry struct {
	// The revision.
	// +required
	Revision string `json:"revision"`

	// Per role, in the set's order: its name and the fields the revision hash covers
	// (leaderWorkerTemplate, groupIdentity), as written.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Roles []runtime.RawExtension `json:"roles,omitempty"`

	// When the rollout to the revision started ("at", RFC 3339) and who ran it ("by").
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Started runtime.RawExtension `json:"started"`

	// rolling, complete, aborted (by whom, and the reason given) or replaced (the next
	// template change came first).
	// +required
	// +kubebuilder:validation:Enum=rolling;complete;aborted;replaced
	Outcome string `json:"outcome"`

	// When the rollout ended ("at", RFC 3339).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Ended *runtime.RawExtension `json:"ended,omitempty"`

	// Who aborted the rollout.
	// +optional
	By string `json:"by,omitempty"`

	// Why it was aborted, as the --reason or the analysis said.
	// +optional
	Reason string `json:"reason,omitempty"`

	// The revision ran before: this rollout went back to it (an undo, a revert).
	// +optional
	Rollback bool `json:"rollback,omitempty"`

	// The aborted rollout started again by `rollout retry` (retryReason: its --reason).
	// +optional
	Retry bool `json:"retry,omitempty"`

	// The --reason given to `rollout retry`.
	// +optional
	RetryReason string `json:"retryReason,omitempty"`
}

// RolloutStateList is a list of RolloutStates.
//
// +kubebuilder:object:root=true
type RolloutStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutState `json:"items"`
}

// Target is the set's revision, slices, and per role the replicas and rollout budgets, when the
// state's last step was taken: what render replays that step with.
//
// +kubebuilder:pruning:PreserveUnknownFields
type Target struct {
	// The revision the last step rolled to.
	// +required
	Revision string `json:"revision"`

	// The set's spec.slices.
	// +required
	// +kubebuilder:validation:Minimum=0
	Slices int32 `json:"slices"`

	// Per role, in the set's order: its replicas and its maxSurge and maxUnavailable resolved
	// to group counts.
	// +required
	Roles []RoleTarget `json:"roles"`
}

// RoleTarget is one role's replicas and resolved rollout budgets.
type RoleTarget struct {
	// The role's name.
	// +required
	Name string `json:"name"`

	// The role's replicas: groups per slice.
	// +required
	Replicas int32 `json:"replicas"`

	// The groups the role may run above its replicas during a step (maxSurge, rounded up).
	// +required
	MaxSurge int32 `json:"maxSurge"`

	// The groups of the role that may be unavailable during a step (maxUnavailable, rounded down).
	// +required
	MaxUnavailable int32 `json:"maxUnavailable"`
}

// RevisionRecord is what one revision puts into its LeaderWorkerSets.
//
// +kubebuilder:pruning:PreserveUnknownFields
type RevisionRecord struct {
	// The revision: the first 8 hex digits of the hash of the set's role names and templates,
	// as the LeaderWorkerSets' names and disaggregatedset.x-k8s.io/revision labels carry it.
	// +required
	Revision string `json:"revision"`

	// The set's spec.placementPolicy when the revision was deployed.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	PlacementPolicy *runtime.RawExtension `json:"placementPolicy,omitempty"`

	// The revision's roles, in the set's order.
	// +required
	// +kubebuilder:validation:MinItems=1
	Roles []RoleRecord `json:"roles"`
}

// RoleRecord is one role of a revision.
//
// +kubebuilder:pruning:PreserveUnknownFields
type RoleRecord struct {
	// The role's name.
	// +required
	Name string `json:"name"`

	// The role's LeaderWorkerSet spec as deployed (defaults applied), without replicas: kept as
	// written, neither defaulted nor pruned, so it hashes to the revision it names.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec runtime.RawExtension `json:"spec"`

	// The labels and annotations of the role's LeaderWorkerSets.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Metadata *runtime.RawExtension `json:"metadata,omitempty"`

	// The role's scaling, present for roles an autoscaler sizes (mode External).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Scaling *runtime.RawExtension `json:"scaling,omitempty"`
}

// SliceState is one slice's deployed revisions.
//
// +kubebuilder:pruning:PreserveUnknownFields
type SliceState struct {
	// The slice's index, from 0.
	// +required
	// +kubebuilder:validation:Minimum=0
	Slice int32 `json:"slice"`

	// The revisions the slice runs, in the order they were deployed (the last is the newest).
	// +required
	Revisions []SliceRevision `json:"revisions"`

	// The slice's revisions before the state's last step (formatVersion 2; empty: nothing was
	// deployed).
	// +optional
	Previous []SliceRevision `json:"previous,omitempty"`
}

// SliceRevision is one revision deployed in a slice.
//
// +kubebuilder:pruning:PreserveUnknownFields
type SliceRevision struct {
	// The revision; it has a record under the top-level revisions.
	// +required
	Revision string `json:"revision"`

	// Role name to the replicas the revision runs of it in this slice.
	// +required
	Replicas map[string]int32 `json:"replicas"`

	// For an old revision mid-rollout: role name to the replicas it started the rollout with.
	// +optional
	InitialReplicas map[string]int32 `json:"initialReplicas,omitempty"`
}

// RolloutSummary says where the rollout stands, for people and for Argo CD's health check.
type RolloutSummary struct {
	// The set the state belongs to.
	// +optional
	Set string `json:"set,omitempty"`

	// The set's revision: the rollout's target.
	// +optional
	Revision string `json:"revision,omitempty"`

	// The committed step of the rollout's plan, "i/N" (per slice, comma-separated, where the
	// slices differ); empty at rest.
	// +optional
	Step string `json:"step,omitempty"`

	// AtRest (every slice runs the set's revision alone), Rolling (waiting for the next step),
	// and with a RolloutPolicy: AtGate (held after a wave), Paused or Aborted.
	// +optional
	Phase string `json:"phase,omitempty"`

	// With a RolloutPolicy: the wave the rollout has reached, "i/N".
	// +optional
	Wave string `json:"wave,omitempty"`

	// One line for people: per slice, the step and old→new replicas per role, and what is next.
	// +optional
	Message string `json:"message,omitempty"`
}

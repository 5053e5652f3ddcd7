// Package lws declares the LeaderWorkerSet template types the DisaggregatedSet controller hashes,
// written from the field list in the project's issue #13 (declaration order, JSON tags and the
// CRD defaults of spec §1), not copied from the upstream repository.
package lws

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// RoleTemplate is one element of the list ComputeRevision marshals: the role's name and its
// LeaderWorkerTemplate, in spec order.
type RoleTemplate struct {
	Name     string               `json:"name"`
	Template LeaderWorkerTemplate `json:"template"`
}

type LeaderWorkerTemplate struct {
	LeaderTemplate *corev1.PodTemplateSpec `json:"leaderTemplate,omitempty"`
	WorkerTemplate corev1.PodTemplateSpec  `json:"workerTemplate"`
	// +default=1
	Size *int32 `json:"size,omitempty"`
	// +default="RecreateGroupOnPodRestart"
	RestartPolicy                        RestartPolicyType                                       `json:"restartPolicy,omitempty"`
	SubGroupPolicy                       *SubGroupPolicy                                         `json:"subGroupPolicy,omitempty"`
	VolumeClaimTemplates                 []corev1.PersistentVolumeClaim                          `json:"volumeClaimTemplates,omitempty"`
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
}

type RestartPolicyType string

type SubGroupPolicyType string

type SubGroupPolicy struct {
	// +default="LeaderWorker"
	Type *SubGroupPolicyType `json:"subGroupPolicyType,omitempty"`
	Size *int32              `json:"subGroupSize,omitempty"`
}

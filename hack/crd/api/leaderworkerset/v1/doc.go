// Package v1 declares the LeaderWorkerSet API (leaderworkerset.x-k8s.io/v1) as the local control
// plane of kubectl-disagg's tests serves it: the fields, defaults and enumerations of the LWS API,
// with the pod and claim templates typed by k8s.io/api, so the API server checks a rendered LWS
// as deeply as a cluster with an LWS installation does. Written for this project from the LWS
// API's field list; controller-gen turns it into testenv/crd (hack/generate-crds.sh).
//
// +groupName=leaderworkerset.x-k8s.io
// +versionName=v1
package v1

//go:build tools

// Package tools pins controller-gen in this module's go.mod and go.sum.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"

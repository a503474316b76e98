//go:build tools

// Package tools pins the helm CLI built by ../build.sh (see k8s/tools.go).
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)

//go:build tools

// Package tools pins the control-plane programs built by ../build.sh, so that
// `go mod tidy` keeps every module they need in go.mod and go.sum. It is never
// compiled: the build tag excludes it and main packages cannot be imported.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)

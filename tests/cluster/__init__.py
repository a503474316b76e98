"""A real Kubernetes control plane (etcd, kube-apiserver, ...) built from Go modules for tests and benches."""

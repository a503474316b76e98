"""End-to-end tests against a real kube-apiserver and etcd (see conftest.py for the fixtures)."""

"""Dynamic resource allocation (resource.k8s.io/v1) as Kubernetes evaluates it, pure core: CEL for device
selectors (`cel`), the structured-parameters allocator (`structured`) and which DeviceClass backs an extended
resource (`deviceclass`), as upstream's k8s.io/dynamic-resource-allocation splits them."""

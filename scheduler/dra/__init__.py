"""Dynamic Resource Allocation: CEL for device selectors (cel), the structured-parameters allocator (structured)."""

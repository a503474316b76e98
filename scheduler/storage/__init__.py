"""Storage rules the volume plugins share, and the simulated PV controller with them (not plugins).

Our counterparts of the libraries upstream's volume plugins import: `volume` (component-helpers
`storage/volume` and `storage/ephemeral`: claims, PVs, classes, binding, FindMatchingVolume) and
`csi_translation` (csi-translation-lib: in-tree volume sources as CSI). Like `scheduler.dra`, they sit below
the plugins and know nothing of them.
"""

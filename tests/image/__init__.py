"""The container image: building it offline with podman (build.py, podman.py) and checking its inputs.

The e2e test that runs the built image against the test control plane is tests/e2e/test_image.py.
"""

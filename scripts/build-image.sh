#!/usr/bin/env bash
# Builds the repository's Dockerfile with podman on a machine that reaches no container registry and maybe no
# package index from inside a build: a minimal Debian bookworm base made with mmdebstrap, a wheelhouse of the
# lock files, then `podman build` (tests/image/build.py). Everything is cached under _build/image, keyed by its
# inputs: a cold build takes about a minute, an unchanged rebuild a few seconds. Prints the image size, the time
# of each step and the Python distributions of the image.
#
#   bash scripts/build-image.sh [--tag localhost/pyscheduler:dev] [--base IMAGE] [--save FILE.tar]
#
# The image lives in this checkout's own podman store (_build/image/podman); --save writes an OCI archive to
# load or push elsewhere. With a registry at hand, plain `docker build .` or `podman build .` uses the
# Dockerfile's default base (the public python image) and PyPI instead.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh --no-control-plane
exec .venv/bin/python -m tests.image build "$@"

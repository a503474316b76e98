#!/usr/bin/env bash
# Installs the Debian packages the tests need, with apt, non-interactively, and only those that are missing
# (nothing is touched when everything is there). Called by scripts/setup.sh, hence by scripts/test.sh,
# scripts/bench.sh and .ci/run. Each package and why:
#   openssl       tests/cluster/harness.py makes the API server's service-account signing key with it
#   python3-venv  `python3 -m venv .venv` needs ensurepip, which Debian's python3 ships separately
#   golang-go     only when no Go is installed (the machines have /usr/local/go): tests/cluster/build.sh builds
#                 etcd, kube-apiserver, kube-controller-manager, kube-scheduler and helm from Go modules
#   prometheus    tests/e2e/test_prometheus.py runs Debian's Prometheus server (as a subprocess, not a service)
#                 against pyscheduler for every dashboard and alert query
#   podman, runc  tests/e2e/test_image.py builds the Dockerfile and runs the image (podman pulls in conmon;
#                 runc because crun fails in the machines' cgroups v1 hybrid mode; no container daemon)
#   mmdebstrap    makes the image test's minimal Debian base (no container registry is reachable)
# Recommended packages are left out: none of them is needed (crun, buildah, fuse-overlayfs, slirp4netns, ...).
#
# Without root (and no password-less sudo) or without apt, nothing is installed: the script says what is
# missing and returns success; the tests that need a missing program are then skipped with that message
# (under CI they fail instead), and README.md says what is lost. Essential pieces (openssl, venv, Go) make
# setup.sh fail later with a clear message.
set -euo pipefail

export PATH=$PATH:/usr/local/go/bin

missing=()
command -v openssl >/dev/null || missing+=(openssl)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
command -v go >/dev/null || missing+=(golang-go)
command -v prometheus >/dev/null || missing+=(prometheus)
command -v podman >/dev/null || missing+=(podman)
[[ -x /usr/sbin/runc ]] || missing+=(runc)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
if ((${#missing[@]} == 0)); then
    exit 0
fi

sudo=()
if ((EUID != 0)); then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        echo "install-system-packages.sh: not root, cannot install: ${missing[*]}" >&2
        echo "install-system-packages.sh: tests that need them will be skipped (see README.md, Tests)" >&2
        exit 0
    fi
fi
if ! command -v apt-get >/dev/null; then
    echo "install-system-packages.sh: no apt-get, cannot install: ${missing[*]}" >&2
    exit 0
fi

echo "install-system-packages.sh: installing ${missing[*]}"
start=$SECONDS
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}"
echo "install-system-packages.sh: installed in $((SECONDS - start)) s"

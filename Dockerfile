# syntax=docker/dockerfile:1
# pyscheduler image: `docker build -t <registry>/pyscheduler:0.1.0 .` (or `podman build`) at the repository root.
#
# BASE_IMAGE: both stages start from it. The default is the public Python image, pinned by tag (exact Python
# patch, Debian release) and by the digest of its multi-architecture index, as recorded in public repositories
# (this project's machines cannot reach a registry to re-check it; `docker buildx imagetools inspect
# python:3.11.14-slim-bookworm` shows it). Any Debian-based image with python3 3.11 and its venv module (with
# ensurepip's pip >= 22.3, for `pip --python`) works:
# scripts/build-image.sh, which the test suite runs, builds from a minimal Debian bookworm made locally with
# mmdebstrap (python3 from Debian's packages) because no registry is reachable there.
#
# Two stages:
#   build   - a virtualenv at /opt/venv holding exactly the dependencies of requirements.lock (exact versions,
#             every file's sha256, wheels only: no compiler) and pyscheduler's wheel, built from this source
#             tree with the build requirements of requirements-build.lock (hash-checked too) in a separate
#             venv; /opt/venv gets no pip, setuptools or wheel. scripts/lock.sh regenerates both lock files.
#   runtime - the base image plus /opt/venv only: no pip cache, no compiler, no source tree, no tests.
# The runtime runs as the numeric non-root user 65532, the UID the Helm chart's securityContext uses, and
# works with a read-only root filesystem (.pyc files are compiled at build time; /tmp is an emptyDir in the
# chart).
#
# WHEELHOUSE: a directory of wheels to install from instead of PyPI (pip --no-index --find-links). Empty by
# default; scripts/build-image.sh mounts its wheelhouse there (`podman build --volume`) because the package
# index may not be reachable from inside a build. The hashes are checked either way.

ARG BASE_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM ${BASE_IMAGE} AS build

ARG WHEELHOUSE=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# /opt/build: pip and the pinned build requirements, to build pyscheduler's wheel; thrown away with the stage.
# /opt/venv: what the image runs, without pip; /opt/build's pip installs into it (pip --python).
RUN python3 -m venv /opt/build \
    && python3 -m venv --without-pip /opt/venv
WORKDIR /src
COPY requirements-build.lock requirements.lock ./
RUN set -eu; \
    if [ -n "$WHEELHOUSE" ]; then set -- --no-index --find-links "$WHEELHOUSE"; fi; \
    /opt/build/bin/pip install "$@" --require-hashes --no-deps --only-binary=:all: -r requirements-build.lock; \
    /opt/build/bin/pip --python /opt/venv/bin/python install "$@" \
        --require-hashes --no-deps --only-binary=:all: -r requirements.lock
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
RUN /opt/build/bin/pip wheel --no-index --no-deps --no-build-isolation --wheel-dir /tmp/dist . \
    && /opt/build/bin/pip --python /opt/venv/bin/python install --no-index --no-deps /tmp/dist/pyscheduler-*.whl \
    && /opt/build/bin/pip --python /opt/venv/bin/python check \
    && /opt/venv/bin/python -m compileall -q /opt/venv/lib \
    && /opt/venv/bin/pyscheduler --help >/dev/null


FROM ${BASE_IMAGE} AS runtime

ARG BASE_IMAGE
LABEL org.opencontainers.image.title="pyscheduler" \
      org.opencontainers.image.description="A secondary Kubernetes scheduler in Python" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# Compile the standard library once (the official image ships it without .pyc files), so that a read-only
# root filesystem costs nothing at start-up; and give UID/GID 65532 a name (written directly: useradd is
# not in every Debian base).
RUN python3 -m compileall -q "$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')" \
    && echo 'pyscheduler:x:65532:65532:pyscheduler:/nonexistent:/usr/sbin/nologin' >>/etc/passwd \
    && echo 'pyscheduler:x:65532:' >>/etc/group

COPY --from=build /opt/venv /opt/venv

USER 65532:65532
EXPOSE 10259

ENTRYPOINT ["pyscheduler", "run"]
CMD ["--config", "/etc/pyscheduler/config.yaml", "--port", "10259"]

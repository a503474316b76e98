# syntax=docker/dockerfile:1
# pyscheduler image: `docker build -t <registry>/pyscheduler:0.1.0 .` at the repository root.
#
# Two stages on the same pinned base (exact Python patch and Debian release; pin the digest too when you
# mirror it: FROM python:3.11.14-slim-bookworm@sha256:...):
#   build   - a virtualenv at /opt/venv with pyscheduler and its dependencies (all ship wheels, so no
#             compiler is needed; pip, setuptools and wheel are removed from the venv afterwards);
#   runtime - the base image plus /opt/venv only: no pip cache, no compiler, no source tree, no tests.
# The runtime runs as the numeric non-root user 65532, the UID the Helm chart's securityContext uses, and
# works with a read-only root filesystem (no .pyc written at run time; /tmp is an emptyDir in the chart).

FROM python:3.11.14-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
RUN /opt/venv/bin/pip install . \
    && /opt/venv/bin/pip uninstall --yes pip setuptools wheel \
    && /opt/venv/bin/pyscheduler --help >/dev/null


FROM python:3.11.14-slim-bookworm AS runtime

LABEL org.opencontainers.image.title="pyscheduler" \
      org.opencontainers.image.description="A secondary Kubernetes scheduler in Python" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# The base image ships the standard library without .pyc files; compile them once so that a read-only root
# filesystem costs nothing at start-up.
RUN python -m compileall -q /usr/local/lib/python3.11 \
    && groupadd --system --gid 65532 pyscheduler \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin pyscheduler

COPY --from=build /opt/venv /opt/venv

USER 65532:65532
EXPOSE 10259

ENTRYPOINT ["pyscheduler", "run"]
CMD ["--config", "/etc/pyscheduler/config.yaml", "--port", "10259"]

# The crcr relay master. Build from the repository root:
#   docker build -f docker/master.Dockerfile -t crcr-master .
# Configure it with the CRCR_* variables (README's settings table). Its state lives in the volume
# /var/lib/crcr: the master directory, and the secrets (worker passwords, github-token).
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# git: the upstream poller and the force scheduler's revision pinning run it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

# uid 1000 in both images, so a worker container can read the 0600 password files the master side writes.
# The directories exist in the image so that a new volume mounted on one of them takes their owner and mode
# (compose mounts the secrets and the demo upstream as volumes of their own).
RUN useradd --uid 1000 --create-home crcr \
 && install -d -o crcr -g crcr /var/lib/crcr /var/lib/crcr/master /var/lib/crcr/demo \
 && install -d -o crcr -g crcr -m 700 /var/lib/crcr/secrets

WORKDIR /opt/crcr
# The pinned dependencies first: this layer is rebuilt only when the pins change.
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

# Editable, so the package stays in /opt/crcr/master/crcr: settings.REPO_ROOT (two levels above it) is
# then /opt/crcr, where master.cfg, settings.yaml and the backend and worker files are.
COPY pyproject.toml ./
COPY master/ master/
RUN pip install --no-cache-dir --no-deps -e .
COPY scripts/ scripts/
COPY workers/ workers/
COPY backends/ backends/

# Numeric (crcr), so that a runtime can tell it is not root (Kubernetes' runAsNonRoot).
USER 1000
ENV CRCR_SECRETS_DIR=/var/lib/crcr/secrets
# Inside a container the UI must listen on the container's interface for a published port to reach it (the
# relay's default, 127.0.0.1, is the container's own loopback); who may connect is the port mapping's choice.
ENV CRCR_WEB_INTERFACE=0.0.0.0
VOLUME /var/lib/crcr
# The default web and worker ports (CRCR_WEB_PORT, CRCR_WORKER_PORT).
EXPOSE 8010 9989
# No curl in the slim image; Python's urllib fails on a refused connection or an HTTP error alike.
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s CMD ["python", "-c", "import os, urllib.request; \
urllib.request.urlopen('http://localhost:%s/api/v2' % os.environ.get('CRCR_WEB_PORT', '8010'), timeout=4)"]
# Checks the files like `crcr check`, creates or upgrades the master directory, then becomes Buildbot.
CMD ["crcr", "master", "start", "--basedir", "/var/lib/crcr/master", "--nodaemon"]

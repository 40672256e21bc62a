# The crcr worker base image: buildbot-worker and pytest at the relay's pins, and nothing else.
# Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t crcr-worker .
# Vendors extend it with their drivers and toolchains, keeping the pins:
#   FROM crcr-worker
#   USER root
#   RUN apt-get update && apt-get install -y ... && pip install --no-cache-dir -c /opt/crcr/constraints.txt ...
#   USER 1000
# Run it with CRCR_MASTER (host:port), CRCR_WORKER_NAME (<host>-<device>-<index>) and the host's password
# in a file (default /run/secrets/crcr-worker-password); see docker/worker-entrypoint.sh.
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# git: builds check out upstream.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

# The same uid as the master image's user: see master.Dockerfile.
RUN useradd --uid 1000 --create-home crcr \
 && install -d -o crcr -g crcr /var/lib/crcr-worker

WORKDIR /opt/crcr
# The master's requirements.txt as constraints: what a worker installs, and what that pulls in (twisted),
# gets the master's exact versions. pip refuses extras (buildbot[tls]) in constraints: they are cut off.
COPY requirements.txt ./
RUN sed -E 's/\[[^]]*\]//' requirements.txt > constraints.txt \
 && pip install --no-cache-dir -c constraints.txt buildbot-worker pytest

COPY docker/worker-entrypoint.sh /usr/local/bin/crcr-worker-entrypoint.sh

# Numeric (crcr): see master.Dockerfile.
USER 1000
VOLUME /var/lib/crcr-worker
ENTRYPOINT ["/usr/local/bin/crcr-worker-entrypoint.sh"]

# The Crossbar.io router carrying the message queue of several crcr masters (docker/compose.cluster.yaml).
# Build from the repository root:
#   docker build -f docker/router.Dockerfile -t crcr-router .
# Crossbar.io at router/requirements.txt's pins, installed whole without resolving (as `make router-venv`),
# and router-config.json: what `crcr router start --interface 0.0.0.0` writes (a unit test keeps them equal),
# so that the masters reach it on the container's interface. WAMP has no authentication in Buildbot 4.3:
# never publish its port; only the masters may reach it.
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# Crossbar writes its node key and pid file beside its configuration: the folder is its user's.
RUN useradd --uid 1000 --create-home crcr \
 && install -d -o crcr -g crcr /var/lib/crcr-router /var/lib/crcr-router/.crossbar

WORKDIR /opt/crcr-router
COPY router/requirements.txt ./
RUN pip install --no-cache-dir --no-deps -r requirements.txt
COPY --chown=1000:1000 docker/router-config.json /var/lib/crcr-router/.crossbar/config.json

# Numeric (crcr): see master.Dockerfile.
USER 1000
# The WebSocket transport of router-config.json: ws://<router>:8080/ws.
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=5s --start-period=60s CMD ["python", "-c", "import socket; \
socket.create_connection(('127.0.0.1', 8080), timeout=4).close()"]
CMD ["crossbar", "start", "--cbdir", "/var/lib/crcr-router/.crossbar"]

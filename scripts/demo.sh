#!/usr/bin/env bash
# `make demo`: a master on sqlite, a local demo upstream, the local demo host's workers; then a new upstream commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${CRCR_DEMO_STATE:-$root/.state/demo}  # overridable so tests run a demo of their own
export PATH=$root/.venv/bin:$PATH
export CRCR_UPSTREAM_URL=file://$state/upstream.git
export CRCR_POLL_INTERVAL=${CRCR_POLL_INTERVAL:-5}
secrets=${CRCR_SECRETS_DIR:-$root/secrets}
host=demo-local  # workers/demo-local.yaml

running() { [ -f "$1/twistd.pid" ] && kill -0 "$(cat "$1/twistd.pid")" 2>/dev/null; }

"$root/scripts/init-demo-upstream.sh" "$state"
crcr worker ensure-password "$host" >/dev/null

if running "$state/master"; then
  echo "the demo master is already running"
else
  crcr master start --basedir "$state/master" --wait-for-upstream 120
fi

# One Buildbot worker per device unit of the host, as `crcr worker register` tells a lab admin.
mkdir -p "$state/workers"
for unit in $(crcr worker units "$host"); do
  if [ ! -f "$state/workers/$unit/buildbot.tac" ]; then
    buildbot-worker create-worker --quiet --keepalive "${CRCR_WORKER_KEEPALIVE:-30}" "$state/workers/$unit" \
      "localhost:${CRCR_WORKER_PORT:-9989}" "$unit" "$(cat "$secrets/worker-$host")"
  fi
  running "$state/workers/$unit" || buildbot-worker start "$state/workers/$unit" >/dev/null
done

"$root/scripts/init-demo-upstream.sh" "$state" "Demo change at $(date -u +%H:%M:%S)"
echo
echo "crcr demo is running. Open the waterfall: http://localhost:${CRCR_WEB_PORT:-8010}/#/waterfall"
echo "A new upstream commit was pushed; its build appears within a few seconds. 'make stop' stops it all."

#!/usr/bin/env bash
# `make demo`: a master on sqlite, a local demo upstream, one local worker; then a new upstream commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${CRCR_DEMO_STATE:-$root/.state/demo}  # overridable so tests run a demo of their own
venv=$root/.venv
export PATH=$venv/bin:$PATH
export CRCR_UPSTREAM_URL=file://$state/upstream.git
export CRCR_POLL_INTERVAL=${CRCR_POLL_INTERVAL:-5}
secrets=${CRCR_SECRETS_DIR:-$root/secrets}
worker_name=demo-local

commit() {  # commit <message>: change the demo upstream a little and push it
  local work=$state/upstream-work
  echo "# $1" >> "$work/CHANGES.md"
  git -C "$work" add -A
  git -C "$work" -c user.name="Demo Upstream" -c user.email=demo@localhost commit -q -m "$1"
  git -C "$work" push -q origin main
}

mkdir -p "$state"
if [ ! -d "$state/upstream.git" ]; then
  git init -q --bare -b main "$state/upstream.git"
  git init -q -b main "$state/upstream-work"
  git -C "$state/upstream-work" remote add origin "$state/upstream.git"
  cp -r "$root/scripts/demo-upstream/." "$state/upstream-work/"
  for message in "Initial demo upstream" "Add the ops tests" "Tidy the smoke test"; do commit "$message"; done
fi

mkdir -p -m 700 "$secrets"
if [ ! -s "$secrets/worker-$worker_name" ]; then
  (umask 077; python -c 'import secrets; print(secrets.token_urlsafe(32))' > "$secrets/worker-$worker_name")
fi

if [ -f "$state/master/twistd.pid" ] && kill -0 "$(cat "$state/master/twistd.pid")" 2>/dev/null; then
  echo "the demo master is already running"
else
  crcr master start --basedir "$state/master" --wait-for-upstream 120
fi

if [ ! -f "$state/worker/buildbot.tac" ]; then
  buildbot-worker create-worker --quiet "$state/worker" "localhost:${CRCR_WORKER_PORT:-9989}" \
    "$worker_name" "$(cat "$secrets/worker-$worker_name")"
fi
if ! { [ -f "$state/worker/twistd.pid" ] && kill -0 "$(cat "$state/worker/twistd.pid")" 2>/dev/null; }; then
  buildbot-worker start "$state/worker" >/dev/null
fi

commit "Demo change at $(date -u +%H:%M:%S)"
echo
echo "crcr demo is running. Open the waterfall: http://localhost:${CRCR_WEB_PORT:-8010}/#/waterfall"
echo "A new upstream commit was pushed; its build appears within a few seconds. 'make stop' stops it all."

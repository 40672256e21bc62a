#!/usr/bin/env bash
# `make stop`: stop the demo's workers and master, if they run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${CRCR_DEMO_STATE:-$root/.state/demo}  # overridable so tests run a demo of their own
export PATH=$root/.venv/bin:$PATH
for worker in "$state"/workers/*/; do
  [ -f "$worker/twistd.pid" ] && buildbot-worker stop "$worker"
done
# Hosts a lab admin attached with `crcr-host up --host-dir $state/hosts/NAME` (the commands make demo prints).
for host in "$state"/hosts/*/; do
  [ -f "$host/state/crcr-host.json" ] && crcr host stop --host-dir "$host"
done
[ -d "$state/master" ] && crcr master stop --basedir "$state/master"
exit 0

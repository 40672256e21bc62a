#!/usr/bin/env bash
# `make stop`: stop the demo's workers and master, if they run. `make clean` (--clean): then remove the second hosts
# attached to it and delete its state.
set -uo pipefail
source "$(dirname "$0")/demo-state.sh"  # root, state, hosts
export PATH=$root/.venv/bin:$PATH
for worker in "$state"/workers/*/; do
  [ -f "$worker/twistd.pid" ] && buildbot-worker stop "$worker"
done
# Hosts a lab admin attached with `crcr-host up --host-dir $hosts/NAME` (the commands make demo prints).
for host in "$hosts"/*/; do
  [ -f "$host/state/crcr-host.json" ] && crcr host stop --host-dir "$host"
done
[ -d "$state/master" ] && crcr master stop --basedir "$state/master"
if [ "${1:-}" = --clean ]; then
  for host in "$hosts"/*/; do
    # --drop-cache: the demo's hosts go whole, their compiler caches with them (a lab host's down keeps its own).
    [ -f "$host/state/crcr-host.json" ] && crcr host down --drop-cache --host-dir "$host"
  done
  rmdir "$hosts" 2>/dev/null  # unless something else lives there
  rm -rf "$state"
fi
exit 0

#!/usr/bin/env bash
# `make stop`: stop the demo worker and master, if they run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${CRCR_DEMO_STATE:-$root/.state/demo}  # overridable so tests run a demo of their own
export PATH=$root/.venv/bin:$PATH
[ -f "$state/worker/twistd.pid" ] && buildbot-worker stop "$state/worker"
[ -d "$state/master" ] && crcr master stop --basedir "$state/master"
exit 0

#!/usr/bin/env bash
# init-demo-upstream.sh STATE_DIR [MESSAGE]: make the demo's upstream, a bare repository STATE_DIR/upstream.git
# holding scripts/demo-upstream/ in three commits, unless it exists; with MESSAGE, also push one more commit.
# Used by `make demo` and by docker/compose.yaml.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=$1
work=$state/upstream-work

commit() {  # commit <message>: change the demo upstream a little and push it
  echo "# $1" >> "$work/CHANGES.txt"
  git -C "$work" add -A
  git -C "$work" -c user.name="Demo Upstream" -c user.email=demo@localhost commit -q -m "$1"
  git -C "$work" push -q origin main
}

mkdir -p "$state"
if [ ! -d "$state/upstream.git" ]; then
  git init -q --bare -b main "$state/upstream.git"
  git init -q -b main "$work"
  git -C "$work" remote add origin "$state/upstream.git"
  cp -r "$root/scripts/demo-upstream/." "$work/"
  for message in "Initial demo upstream" "Add the ops tests" "Tidy the smoke test"; do commit "$message"; done
fi
if [ $# -ge 2 ]; then
  commit "$2"
fi

#!/usr/bin/env bash
# init-demo-upstream.sh STATE_DIR [--docs] [MESSAGE]: make the demo's upstream, a bare repository
# STATE_DIR/upstream.git holding scripts/demo-upstream/ in three commits, unless it exists; with MESSAGE, also push
# one more commit: with what its work tree STATE_DIR/upstream-work holds, and a line of CHANGES.txt (built); with
# --docs, a line of docs/index.rst alone (the shipped ignore list's docs/**: not relevant, told at once, unbuilt).
# Used by `make demo` and by docker/compose.yaml.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=$1
work=$state/upstream-work
shift
changed=CHANGES.txt
if [ "${1:-}" = --docs ]; then
  changed=docs/index.rst
  shift
  [ $# -ge 1 ] || { echo "usage: $0 STATE_DIR [--docs] [MESSAGE]: --docs needs a MESSAGE" >&2; exit 2; }
fi

commit() {  # commit FILE MESSAGE: a line of MESSAGE added to FILE, committed and pushed; with CHANGES.txt, so is the
            # rest of the work tree (a test broken there, say)
  local what=$1
  [ "$1" != CHANGES.txt ] || what=.
  echo "# $2" >> "$work/$1"
  git -C "$work" add -- "$what"
  git -C "$work" -c user.name="Demo Upstream" -c user.email=demo@localhost commit -q -m "$2" -- "$what"
  git -C "$work" push -q origin main
}

mkdir -p "$state"
if [ ! -d "$state/upstream.git" ]; then
  git init -q --bare -b main "$state/upstream.git"
  git init -q -b main "$work"
  git -C "$work" remote add origin "$state/upstream.git"
  cp -r "$root/scripts/demo-upstream/." "$work/"
  for message in "Initial demo upstream" "Add the ops tests" "Tidy the smoke test"; do commit CHANGES.txt "$message"; done
fi
if [ $# -ge 1 ]; then
  commit "$changed" "$1"
fi

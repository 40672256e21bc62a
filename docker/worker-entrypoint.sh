#!/usr/bin/env bash
# Entrypoint of the crcr worker image: make the Buildbot worker CRCR_WORKER_NAME of the master at CRCR_MASTER,
# logging in with the host's password from CRCR_WORKER_PASSWORD_FILE, then run it in the foreground.
# It needs nothing from the image but buildbot-worker and sed on PATH, so it runs (and is tested) outside Docker too.
set -euo pipefail

fail() {
  echo "crcr-worker: error: $*" >&2
  exit 1
}

[ -n "${CRCR_MASTER:-}" ] ||
  fail "CRCR_MASTER is not set: the master's worker address, host:port (e.g. relay.example.org:9989)"
[ -n "${CRCR_WORKER_NAME:-}" ] ||
  fail "CRCR_WORKER_NAME is not set: this unit's worker name, <host>-<device>-<index> (e.g. spyre-lab-01-spyre-0)"
password_file=${CRCR_WORKER_PASSWORD_FILE:-/run/secrets/crcr-worker-password}
worker_dir=${CRCR_WORKER_DIR:-/var/lib/crcr-worker}
keepalive=${CRCR_WORKER_KEEPALIVE:-30}  # the master's default worker_keepalive

[[ $keepalive =~ ^[1-9][0-9]*$ ]] ||
  fail "CRCR_WORKER_KEEPALIVE must be a whole number of seconds, not '$keepalive'"
{ [ -f "$password_file" ] && [ -r "$password_file" ]; } ||
  fail "cannot read the password file $password_file (CRCR_WORKER_PASSWORD_FILE)"
[ -n "$(<"$password_file")" ] || fail "the password file $password_file (CRCR_WORKER_PASSWORD_FILE) is empty"

mkdir -p "$worker_dir"
# The environment is the truth: buildbot.tac is made anew on each start (create-worker would only write a
# buildbot.tac.new beside an existing one that differs).
rm -f "$worker_dir/buildbot.tac" "$worker_dir/buildbot.tac.new"
# The password is never a command's argument, where `ps` shows it, nor in buildbot.tac or the environment, where
# builds (any upstream commit's or pull request's code) would read it: create-worker gets a placeholder,
# buildbot.tac reads the password from standard input when the worker starts (the line is crcr's
# hostsetup.TAC_PASSWORD), and the worker runs without CRCR_WORKER_PASSWORD_FILE. A rotated file takes effect on
# restart. What remains: builds run as this container's user, who can read the file itself (on a host set up by
# `crcr worker register`, only root reads it and systemd hands it over).
# --maxdelay: reconnect within a minute of a master restart (buildbot-worker's default is five).
buildbot-worker create-worker --quiet --keepalive "$keepalive" --maxdelay 60 \
  "$worker_dir" "$CRCR_MASTER" "$CRCR_WORKER_NAME" see-password-file
sed -i 's|^passwd = .*|import sys; passwd = sys.stdin.readline().strip()  # given on standard input at start|' \
  "$worker_dir/buildbot.tac"
unset CRCR_WORKER_PASSWORD_FILE
exec buildbot-worker start --nodaemon "$worker_dir" <"$password_file"

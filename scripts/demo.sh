#!/usr/bin/env bash
# `make demo`: a master on sqlite, a local demo upstream, the local demo host's workers; then a new upstream commit.
set -euo pipefail
source "$(dirname "$0")/demo-state.sh"  # root, state, hosts; the settings it started with, unless given again
keep_settings
export PATH=$root/.venv/bin:$PATH
export CRCR_UPSTREAM_URL=file://$state/upstream.git
export CRCR_POLL_INTERVAL=${CRCR_POLL_INTERVAL:-5}
# The demo's upstream is not PyTorch: PyTorch's list of disabled tests names none of its tests (set it to follow one).
export CRCR_DISABLED_TESTS_URL=${CRCR_DISABLED_TESTS_URL-}
host=demo-local  # workers/demo-local.yaml
secrets=${CRCR_SECRETS_DIR:-secrets}
[[ $secrets = /* ]] || secrets=$root/$secrets  # relative to the repository, as the relay reads it
# The demo's admin (scripts/demo-user.sh): it signs in to the UI and may force builds.
export CRCR_ADMINS=demo${CRCR_ADMINS:+,$CRCR_ADMINS}

running() { [ -f "$1/twistd.pid" ] && kill -0 "$(cat "$1/twistd.pid")" 2>/dev/null; }

"$root/scripts/init-demo-upstream.sh" "$state"
# The clone's own pyproject.toml configures pytest for crcr's tests: pytest, looking upwards from a test for its
# configuration, stops here instead, whether the relay runs the demo upstream's tests or a newcomer does.
printf '%s\n' "# Written by make demo: pytest's search for a configuration file stops here, not at the clone's." \
  "[pytest]" >"$state/pytest.ini"
crcr worker ensure-password "$host" >/dev/null
"$root/scripts/demo-user.sh" "$secrets"

if running "$state/master"; then
  echo "the demo master is already running"
else
  crcr master start --basedir "$state/master" --wait-for-upstream 120
fi

# The host's workers, made with the very commands `crcr worker register` prints for a lab admin (their
# create-worker paragraph); the demo host's venv is this repository's. Each unit gets the host's password on its
# standard input, as systemd hands it over on a real host (the demo reads the master's copy: one machine).
workers=$state/workers
mkdir -p "$workers"
ln -sfn "$root/.venv" "$workers/venv"
crcr worker show "$host" --by-hand --host-dir "$workers" --master "localhost:${CRCR_WORKER_PORT:-9989}" |
  awk -v RS= '/ create-worker /' | bash -e >/dev/null
# They start with the environment the host tool gives a trial host's units, nothing of this shell's (your PATH, PIP_*,
# tokens): a build's commands could read it.
declared=$(crcr worker unit-environment --venv "$workers/venv")
mapfile -t unit_env <<<"$declared"
for unit in $(crcr worker units "$host"); do
  running "$workers/$unit" ||
    env -i "${unit_env[@]}" "$workers/venv/bin/buildbot-worker" start --quiet "$workers/$unit" <"$secrets/worker-$host"
done

"$root/scripts/init-demo-upstream.sh" "$state" "Demo change at $(date -u +%H:%M:%S)"
# The demo's settings that differ from the defaults go with the crcr commands it prints.
settings=""
for name in "${RELAY_SETTINGS[@]}"; do
  if [ -n "${!name:-}" ]; then settings+="$name=$(printf %q "${!name}") "; fi
done
echo
echo "crcr demo is running. Open the waterfall: http://localhost:${CRCR_WEB_PORT:-8010}/#/waterfall"
echo "A new upstream commit was pushed; its build appears within a few seconds. 'make stop' stops it all,"
echo "'make demo' resumes it with these settings."
echo "To force, rebuild or stop builds, sign in (Anonymous, top right, then Login) as demo, the demo's admin,"
password_file=$secrets/demo-password
echo "with the password $(cat "$password_file")   (kept in $password_file)"
echo "From the command line: CRCR_PASSWORD=\$(cat $password_file) $settings.venv/bin/crcr force demo main --user demo"
echo "and the demo backend's health: $settings.venv/bin/crcr status demo"
# A lab admin's story on this machine.
echo
echo "Attach a second local host as a lab admin would: register it and reconfigure the relay,"
echo "  $settings.venv/bin/crcr worker register demo-second --device demo:2 --admin \"$(id -un) <$(id -un)@localhost>\" --host-dir $hosts/demo-second"
echo "  $settings.venv/bin/crcr master reconfig --basedir $state/master"
echo "then run, as yourself, the host commands register prints (fetch crcr-host, crcr-host up): a trial host whose two"
echo "units run under supervisord. 'make stop' stops them too; 'make clean' (or python3 crcr-host down) removes them."
if [ "$(id -u)" = 0 ]; then
  echo "(You are root: run the host commands as an unprivileged user. As root they make the account crcr for builds,"
  echo "and git refuses to let another account read root's demo upstream.)"
fi

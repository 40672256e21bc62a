# Sourced by demo.sh and stop.sh: where the demo keeps its state and its second hosts, and the settings it started with.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${CRCR_DEMO_STATE:-$root/.state/demo}  # overridable so tests run a demo of their own
# The relay settings a demo may be started with (docs/operators.md; those its printed commands carry first), and where
# a second host goes. demo.sh keeps the ones given in settings.env, so that `make demo` after `make stop` (or a reboot)
# resumes the same relay, on the same ports; one given again wins.
RELAY_SETTINGS=(CRCR_WEB_PORT CRCR_WORKER_PORT CRCR_SECRETS_DIR CRCR_WORKERS_DIR CRCR_BACKENDS_DIR
                CRCR_PYTORCH_RELAY_URL CRCR_PYTORCH_RELAY_TOKEN_COMMAND)
DEMO_SETTINGS=("${RELAY_SETTINGS[@]}" CRCR_POLL_INTERVAL CRCR_ADMINS CRCR_DEMO_HOSTS)
settings_file=$state/settings.env
if [ -f "$settings_file" ]; then
  while IFS= read -r line; do
    name=${line%%=*}
    [ -n "${!name+given}" ] || eval "export $line"  # written by demo.sh, each value quoted with printf %q
  done <"$settings_file"
fi
# A second local host's folder, outside the clone: the account that attaches it, which need not be the one running
# the demo (as root, an unprivileged one), makes its own folder there.
hosts=${CRCR_DEMO_HOSTS:-/var/tmp/crcr-demo-$(id -un)}

keep_settings() {  # before the demo adds its own (its admin, say)
  mkdir -p "$state"
  for name in "${DEMO_SETTINGS[@]}"; do
    if [ -n "${!name:-}" ]; then printf '%s=%q\n' "$name" "${!name}"; fi
  done >"$settings_file"
}

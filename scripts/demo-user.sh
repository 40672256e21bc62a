#!/usr/bin/env bash
# demo-user.sh SECRETS_DIR: the demo's admin user, `demo`, in the relay's users file, unless it is there; its
# random password is kept in SECRETS_DIR/demo-password (mode 600) so the demo can tell it to whoever runs it.
# Used by `make demo` and by docker/compose.yaml's init; both make `demo` an admin with CRCR_ADMINS.
set -euo pipefail
secrets=$1
password_file=$secrets/demo-password
if [ -s "$password_file" ] && crcr user list | grep -qx demo; then
  exit 0
fi
mkdir -p -m 700 "$secrets"
(umask 077 && python -c "import secrets; print(secrets.token_urlsafe(15))" >"$password_file")
crcr user add demo <"$password_file" >/dev/null

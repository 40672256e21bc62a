"""The token command of the tests' PyTorch's relay (pytorchrelay.PyTorchRelayStandIn.token_command): prints an OIDC
token for $CRCR_DOWNSTREAM_REPO, audience $CRCR_OIDC_AUDIENCE, signed with the key file given, as the issuer given.

    python oidc_token.py KEY_FILE ISSUER
"""

import os
import sys
import time

import jwt


def main(key_file: str, issuer: str) -> None:
    missing = [v for v in ("CRCR_DOWNSTREAM_REPO", "CRCR_OIDC_AUDIENCE") if not os.environ.get(v)]
    if missing:
        sys.exit(f"oidc_token: {', '.join(missing)} not set: the relay sets them when it runs its token command")
    now = int(time.time())
    claims = {"iss": issuer, "aud": os.environ["CRCR_OIDC_AUDIENCE"], "iat": now, "nbf": now, "exp": now + 300,
              "repository": os.environ["CRCR_DOWNSTREAM_REPO"]}
    with open(key_file) as key:
        print(jwt.encode(claims, key.read(), algorithm="RS256"))


if __name__ == "__main__":
    main(*sys.argv[1:3])

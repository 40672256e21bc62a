"""What the relay keeps of the info a unit sends as it connects.

buildbot-worker sends every file of the unit's info/ folder, its whole environment, its /etc/os-release and what
Buildbot needs to run commands on it; Buildbot keeps it all in the worker's info (what builds read) and stores
admin, host, access_uri and version for its Workers page, which draws access_uri as a link. A lab's host is not
the relay's: a `javascript:` access_uri would run, at a click, as whoever is signed in to the relay. So a unit's
info is cut to what the relay shows (admin, host, version; access_uri only as an http(s) address), the relay's
own reader reads (its card, docs/hardware-failures.md) and Buildbot runs commands with, each bounded.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from crcr.names import CARD_INFO

# Shown as text: the Workers page's admin, host and version, and the unit's card (the store keeps 300 characters).
SHOWN_TEXT = ("admin", "host", "version", CARD_INFO)
TEXT_LENGTH = 300
ACCESS_URI = "access_uri"
URL_LENGTH = 2000  # as long as browsers and servers commonly take
WEB_SCHEMES = ("http", "https")
# What Buildbot's worker attaching reads (buildbot.worker.base.AbstractWorker.attached), with its kind: the
# commands the unit knows, its OS (the path module), its folder (a build's basedir property)...
BUILDBOT_NEEDS = {"worker_commands": dict, "system": str, "basedir": str, "numcpus": int, "delete_leftover_dirs": bool}
PATH_LENGTH = 4096  # Linux's PATH_MAX: no longer text is a path of the unit


def kept_worker_info(info: dict) -> dict:
    """The part of `info` (what a unit sent) the relay keeps: values of another kind or too long are left out,
    text cut to TEXT_LENGTH (what a file's trailing newline adds, stripped)."""
    kept = {name: text.strip()[:TEXT_LENGTH] for name in SHOWN_TEXT if isinstance(text := info.get(name), str)}
    if (uri := web_address(info.get(ACCESS_URI))) is not None:
        kept[ACCESS_URI] = uri
    kept.update({name: value for name, kind in BUILDBOT_NEEDS.items()
                 if isinstance(value := info.get(name), kind) and not (kind is str and len(value) > PATH_LENGTH)})
    return kept


def web_address(sent) -> str | None:
    """`sent` as an http(s) address with a host, else None. A browser drops tabs and newlines anywhere in a link
    and control characters around it ("java\\nscript:"): a link with any of them, or a space, is none."""
    if not isinstance(sent, str):
        return None
    uri = sent.strip()
    if len(uri) > URL_LENGTH or not uri.isprintable() or " " in uri:
        return None
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return None
    return uri if parts.scheme in WEB_SCHEMES and parts.netloc else None

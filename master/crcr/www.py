"""The web UI: waterfall, console and grid views."""

from __future__ import annotations

from crcr.settings import Settings

TITLE = "crcr PyTorch relay"


def www_config(settings: Settings) -> dict:
    return {
        "port": settings.web_port,
        "plugins": {"waterfall_view": {}, "console_view": {}, "grid_view": {}},
        # Changes are listed by their upstream commit; the default hooks stay off until webhooks land.
        "change_hook_dialects": {},
    }

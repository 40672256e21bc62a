"""Files Buildbot 4.3's UI asks the server for that Buildbot does not serve, served, so that no page logs a 404 or
an uncaught error:

- plugins/<name>/styles.css of every configured plugin: index.html's loader links one for each, and the grid view
  ships none (a 404 on every page). A plugin without one gets an empty stylesheet.
- //icon.png and //icon.svg: a build page colours the tab's icon from buildbotURL + "/icon.svg", and Buildbot
  requires buildbotURL to end with a slash. Served under the index (the root's "" child, where Twisted routes the
  empty segment), as the base plugin's own icons."""

from __future__ import annotations

from buildbot.plugins.db import get_plugins
from twisted.web import static

ICONS = ("icon.png", "icon.svg")


def serve_what_the_ui_asks_for(plugin_names) -> None:
    """Called at every configuration, once Buildbot has (re)made the index (the plugins' setMaster)."""
    plugins = get_plugins("www", None, load_now=True)
    for name in plugin_names:
        app = plugins.get(name)
        if not (app.static_dir / "styles.css").is_file():
            app.resource.putChild(b"styles.css", static.Data(b"", "text/css"))
    base = plugins.get("base")
    index = base.resource.children.get(b"")
    if index is not None:  # not yet at the master's start: setupSite makes it after the plugins' first setMaster
        for icon in ICONS:
            index.putChild(icon.encode(), static.File(str(base.static_dir / icon)))

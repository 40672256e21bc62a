"""A stand-in for PyTorch's nightly wheel index (a PEP 503 simple index, as download.pytorch.org/whl/nightly/cpu): an
http.server in a thread serving `<url>/<project>/`, a page of links with #sha256= fragments to the wheels added; and
small real wheels to serve (or to reuse), made by hand after the wheel spec (the venv has no wheel builder)."""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import html
import io
import shutil
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def made_wheel(folder: Path, files: dict[str, str], name: str = "torch", version: str = "2.6.0",
               tag: str = "py3-none-any") -> Path:
    """A wheel of `files` (path in the wheel: text) in `folder`, with the METADATA, WHEEL and RECORD the spec asks."""
    dist_info = f"{name}-{version}.dist-info"
    contents = {path: text.encode() for path, text in files.items()}
    contents[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA test wheel.\n".encode()
    contents[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: crcr-tests\nRoot-Is-Purelib: true\n"
                                      f"Tag: {tag}\n").encode()
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, content in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
        writer.writerow([path, f"sha256={digest}", len(content)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    contents[f"{dist_info}/RECORD"] = record.getvalue().encode()
    path = folder / f"{name}-{version}-{tag}.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, content in contents.items():
            archive.writestr(member, content)
    return path


def torch_version_py(version: str, git_version: str) -> str:
    """torch/version.py as torch's build writes it."""
    return (f"from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
            f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = None\n"
            f"git_version = '{git_version}'\nhip: Optional[str] = None\n")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class NightlyIndex:
    """`<url>/<project>/` lists the wheels add()ed (each kept in root/<project>/ beside the page)."""

    def __init__(self, root: Path, project: str = "torch"):
        self.folder = root / project
        self.folder.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.links: list[str] = []
        self.server: ThreadingHTTPServer | None = None
        self.url = ""
        self.write_page()

    def add(self, wheel: Path, sha256: str | None = None) -> None:
        """Serves `wheel`, its link's fragment the wheel's SHA-256 (or `sha256`, to serve a wrong one)."""
        shutil.copyfile(wheel, self.folder / wheel.name)
        sha256 = sha256 or hashlib.sha256(wheel.read_bytes()).hexdigest()
        self.links.append(f'<a href="{html.escape(wheel.name)}#sha256={sha256}">{html.escape(wheel.name)}</a><br/>')
        self.write_page()

    def write_page(self) -> None:
        body = "\n".join(self.links)
        (self.folder / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{body}\n</body></html>\n")

    def start(self) -> NightlyIndex:
        handler = functools.partial(QuietHandler, directory=str(self.root))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> NightlyIndex:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

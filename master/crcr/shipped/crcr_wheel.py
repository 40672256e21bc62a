"""Wheels for a build that reuses another's: run on build hosts with their python3, so the standard library only.

    python3 crcr_wheel.py patch --out DIR [--reused DIR] [--git-version-in PATH] [--commit SHA]

A commit that changes only Python files since one whose shared build succeeded reuses that build's wheels: the relay
fetches them into $CRCR_REUSED_DIR and lists the files changed since then in $CRCR_CHANGED_FILES, one per line,
`<letter>\t<path>` (git's name-status letters A, M, D; a rename comes as a D and an A). Each wheel is copied into
--out with the changed files inside its own top-level packages taken from the checkout (the working directory) or
removed, its version's local part set to `+git<7 hex of --commit>` (default $CRCR_UPSTREAM_SHA), and its .dist-info
folder, METADATA, RECORD and file name made to match: installers check them (uv refuses a wheel renamed alone).
--git-version-in names a module of the wheel (torch/version.py) whose `git_version` (and `__version__`) are set to
the new commit's, so the installed package reports the commit tested.

    python3 crcr_wheel.py nightly --index URL --commit SHA --out DIR [--project torch] [--tries 2]

Fetches the nightly wheel of the commit tested from a PEP 503 simple index (`<index>/<project>/`): of the wheels this
interpreter and machine can install, newest version first, at most --tries are downloaded (their #sha256= checked)
and the first whose `<project>/version.py` names the commit is kept in --out. None does: exit WRONG_COMMIT (75,
EX_TEMPFAIL), as for an index that cannot be read: the right nightly may not be published yet.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import html.parser
import io
import os
import platform
import re
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

WRONG_COMMIT = 75  # EX_TEMPFAIL: the relay counts it an error of the build, not a failure of the tests
BAD_INPUT = 2
BLOCK = 1 << 20
READABLE = 0o644  # a kept wheel's mode (a temporary file's is 0600)
HEX = re.compile(r"[0-9a-f]{7,40}")
# A version of the shapes wheels carry: 2.6.0, 2.6.0a0, 2.6.0rc1.post2, 2.7.0.dev20250101+cpu.
VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?(?:\+([a-z0-9.]+))?", re.I)
CHANGE_LETTERS = {"A", "M", "D"}


class Refused(Exception):
    """A message for the build's log, and the exit code saying whose it is."""

    def __init__(self, message: str, code: int = BAD_INPUT):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------------------------------------- patch


def changed_files(text: str, source: str) -> list[tuple[str, str]]:
    """(letter, path) of each line of `text`, git's name-status lines."""
    changes = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        letter, tab, path = line.partition("\t")
        parts = PurePosixPath(path).parts
        if not tab or letter not in CHANGE_LETTERS or not parts or path.startswith("/") or ".." in parts:
            raise Refused(f"{source}, line {number}: {line!r} is not `<A|M|D>\\t<relative path>`")
        changes.append((letter, path))
    return changes


def record_hash(data: bytes) -> str:
    return record_form(hashlib.sha256(data).digest())


def record_form(sha256: bytes) -> str:
    """RECORD's form of a SHA-256: urlsafe base64 without its padding."""
    return "sha256=" + base64.urlsafe_b64encode(sha256).rstrip(b"=").decode()


def new_version(version: str, commit: str) -> str:
    return version.partition("+")[0] + "+git" + commit[:7]


def commit_of(version: str) -> str | None:
    """The commit a version's local part names (2.6.0a0+git3ff8081), if it names one."""
    match = re.fullmatch(r"git([0-9a-f]{7,40})", version.partition("+")[2])
    return match.group(1) if match else None


def assignment(name: str) -> re.Pattern:
    """A line assigning a string to `name` (annotated or not): groups the part before the string, and the string."""
    return re.compile(r"^(%s[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*)(['\"])(.*?)\2[ \t]*$" % re.escape(name), re.M)


def assigned(text: str, name: str) -> str | None:
    match = assignment(name).search(text)
    return match.group(3) if match else None


class Wheel:
    """A wheel's entries, and its .dist-info's name, version and RECORD (each hash of it checked as the file is
    copied: a wheel damaged on its way here is refused, not passed on with a fresh RECORD that would hide it)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            raise Refused(f"{path}: not a readable wheel ({error})") from error
        self.entries = {info.filename: info for info in self.archive.infolist() if not info.is_dir()}  # in order
        dist_infos = sorted({name.split("/")[0] for name in self.entries if re.fullmatch(r"[^/]+\.dist-info/WHEEL", name)})
        if len(dist_infos) != 1:
            raise Refused(f"{path}: {len(dist_infos)} .dist-info folders with a WHEEL file, one expected")
        self.dist_info = dist_infos[0]
        self.stem = self.dist_info[: -len(".dist-info")]
        self.metadata, self.record = f"{self.dist_info}/METADATA", f"{self.dist_info}/RECORD"
        self.version = self.metadata_version()
        self.recorded = self.recorded_hashes()
        own = {self.dist_info, self.stem + ".data"}
        self.packages = {name.split("/")[0] for name in self.entries if "/" in name} - own
        self.modules = {name for name in self.entries if "/" not in name}

    def read(self, name: str) -> bytes:
        if name not in self.entries:
            raise Refused(f"{self.path}: no {name}")
        return self.archive.read(name)

    def metadata_version(self) -> str:
        headers = self.read(self.metadata).decode("utf-8", "replace").split("\n\n")[0]
        match = re.search(r"^Version:[ \t]*(\S+)[ \t]*$", headers, re.M)
        if not match:
            raise Refused(f"{self.path}: {self.metadata} has no Version")
        return match.group(1)

    def recorded_hashes(self) -> dict[str, str]:
        hashes = {}
        rows = csv.reader(io.StringIO(self.read(self.record).decode("utf-8", "replace")))
        for number, row in enumerate(rows, 1):
            if not row:
                continue
            if len(row) != 3 or not row[0] or (row[1] and not re.fullmatch(r"\w+=[\w-]+", row[1])):
                raise Refused(f"{self.path}: {self.record}, line {number}: malformed ({','.join(row)!r})")
            hashes[row[0]] = row[1]
        return hashes

    def file_name(self, version: str) -> str:
        parts = self.path.name[: -len(".whl")].split("-")
        if len(parts) not in (5, 6):
            raise Refused(f"{self.path}: not a wheel's file name (name-version[-build]-python-abi-platform.whl)")
        return "-".join([parts[0], version.replace("-", "_"), *parts[2:]]) + ".whl"

    def holds(self, path: str) -> bool:
        """Whether `path` of the checkout lies inside one of the wheel's top-level packages or is one of its modules."""
        return path in self.modules or ("/" in path and path.split("/")[0] in self.packages)


def patch_wheel(path: Path, changes: list[tuple[str, str]], checkout: Path, commit: str, out: Path,
                git_version_in: str | None) -> str:
    """Writes the patched copy of the wheel at `path` into `out`; returns the line saying what was done."""
    wheel = Wheel(path)
    with wheel.archive:
        new: dict[str, bytes | None] = {}  # a file's new content, None: removed
        replaced, added, removed, ignored = 0, 0, 0, 0
        for letter, changed in changes:
            there = new[changed] is not None if changed in new else changed in wheel.entries
            if not wheel.holds(changed):
                ignored += 1
            elif letter == "D":
                removed += there
                new[changed] = None
            else:
                source = checkout / changed
                if not source.is_file():
                    raise Refused(f"{changed}: changed ({letter}) in $CRCR_CHANGED_FILES, but no such file in {checkout}")
                replaced += there
                added += not there
                new[changed] = source.read_bytes()
        version = new_version(wheel.version, commit)
        earlier = commit_of(wheel.version)
        if git_version_in:
            earlier = set_git_version(wheel, new, git_version_in, commit, version) or earlier
        name = wheel.file_name(version)
        write_wheel(out / name, wheel, new, version)
    of = f" of {earlier[:7]}" if earlier else ""
    counts = f"{replaced} replaced, {added} added, {removed} removed; {ignored} outside it ignored"
    return f"reused {path.name}{of} + {replaced + added + removed} changed files ({counts}) -> {name}"


def set_git_version(wheel: Wheel, new: dict[str, bytes | None], module: str, commit: str, version: str) -> str | None:
    """Sets `module`'s git_version (and __version__, if it has one) in `new`; returns the git_version it had."""
    content = new[module] if module in new else wheel.read(module) if module in wheel.entries else None
    if content is None:
        raise Refused(f"{wheel.path}: --git-version-in {module}: no such file in the wheel")
    text = content.decode("utf-8")
    before = assigned(text, "git_version")
    if before is None:
        raise Refused(f"{wheel.path}: {module} assigns no git_version = '...' to set")
    for name, value in (("git_version", commit), ("__version__", version)):
        text = assignment(name).sub(lambda match: match.group(1) + repr(value), text)
    new[module] = text.encode("utf-8")
    return before if HEX.fullmatch(before) else None


def write_wheel(target: Path, wheel: Wheel, new: dict[str, bytes | None], version: str) -> None:
    """The wheel with the `new` files, its .dist-info and .data folders renamed for `version`, METADATA and RECORD
    rewritten, written to a temporary file renamed onto `target` (a reader never sees half a wheel)."""
    stem = f"{wheel.stem.rpartition('-')[0]}-{version}"
    renames = {wheel.dist_info + "/": stem + ".dist-info/", wheel.stem + ".data/": stem + ".data/"}

    def renamed(name: str) -> str:
        return next((to + name[len(old):] for old, to in renames.items() if name.startswith(old)), name)

    headers, blank, body = wheel.read(wheel.metadata).decode("utf-8").partition("\n\n")
    headers = re.sub(r"^Version:.*$", f"Version: {version}", headers, count=1, flags=re.M)
    new[wheel.metadata] = (headers + blank + body).encode("utf-8")
    signatures = {f"{wheel.dist_info}/RECORD.jws", f"{wheel.dist_info}/RECORD.p7s"}  # they signed the old RECORD
    names = [n for n in [*wheel.entries, *(n for n in new if n not in wheel.entries)]
             if new.get(n, b"") is not None and n != wheel.record and n not in signatures]
    names.sort(key=lambda n: n.startswith(wheel.dist_info + "/"))  # the spec's order: .dist-info last, RECORD at the end
    rows = []
    target.parent.mkdir(parents=True, exist_ok=True)
    part = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".part-", suffix=".whl", delete=False)
    try:
        with part, zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in names:
                if name in new:
                    content = new[name]
                    archive.writestr(entry(renamed(name), wheel, name), content)
                    digest, size = record_hash(content), len(content)
                else:
                    digest, size = copy(wheel, name, archive, entry(renamed(name), wheel, name))
                rows.append([renamed(name), digest, str(size)])
            rows.append([renamed(wheel.record), "", ""])
            text = io.StringIO()
            csv.writer(text, lineterminator="\n").writerows(rows)
            archive.writestr(entry(renamed(wheel.record), wheel, wheel.record), text.getvalue())
        os.chmod(part.name, READABLE)
        os.replace(part.name, target)
    except BaseException:
        os.unlink(part.name)
        raise


def copy(wheel: Wheel, name: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[str, int]:
    """Copies the wheel's file `name` into `archive` block by block (torch's libraries are hundreds of MB), checking
    it against the wheel's RECORD; returns its RECORD hash and size."""
    digest, size = hashlib.sha256(), 0
    info.file_size = wheel.entries[name].file_size  # zipfile uses ZIP64 for a file that needs it
    with wheel.archive.open(name) as source, archive.open(info, "w") as sink:
        for block in iter(lambda: source.read(BLOCK), b""):
            digest.update(block)
            sink.write(block)
            size += len(block)
    found = record_form(digest.digest())
    recorded = wheel.recorded.get(name, "")
    if recorded.startswith("sha256=") and recorded != found:
        raise Refused(f"{wheel.path}: {wheel.record} gives {name} {recorded}, the file has {found}")
    return found, size


def entry(name: str, wheel: Wheel, old_name: str) -> zipfile.ZipInfo:
    """A zip entry named `name`, with the date and permissions of the wheel's entry `old_name` (a new file: now,
    rw-r--r--)."""
    like = wheel.entries.get(old_name)
    info = zipfile.ZipInfo(name, like.date_time if like else time.localtime()[:6])
    info.external_attr = like.external_attr if like else 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def patch(options: argparse.Namespace) -> None:
    commit = full_commit(options.commit, "--commit (or $CRCR_UPSTREAM_SHA)")
    if not options.reused:
        raise Refused("no --reused folder and $CRCR_REUSED_DIR is not set")
    if "CRCR_CHANGED_FILES" not in os.environ:
        raise Refused("$CRCR_CHANGED_FILES is not set (the files changed since the reused build's commit)")
    changes = changed_files(os.environ["CRCR_CHANGED_FILES"], "$CRCR_CHANGED_FILES")
    reused = Path(options.reused)
    wheels = sorted(reused.glob("*.whl"))
    if not wheels:
        raise Refused(f"{reused}: no wheel (*.whl) in the reused build's folder")
    for path in wheels:
        print(patch_wheel(path, changes, Path.cwd(), commit, Path(options.out), options.git_version_in), flush=True)


def full_commit(commit: str | None, what: str) -> str:
    if not commit or not HEX.fullmatch(commit.lower()):
        raise Refused(f"{what}: {commit!r} is not a commit's hex SHA (7 to 40 characters)")
    return commit.lower()


# -------------------------------------------------------------------------------------------------------- nightly


class Links(html.parser.HTMLParser):
    """The href of each <a> of a simple index's project page."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(value for name, value in attrs if name == "href" and value)


def normalized(project: str) -> str:
    return re.sub(r"[-_.]+", "_", project).lower()


def compatible(file_name: str, project: str) -> bool:
    """Whether this interpreter on this machine can install the wheel named so."""
    parts = file_name[: -len(".whl")].split("-")
    if not file_name.endswith(".whl") or len(parts) not in (5, 6) or normalized(parts[0]) != normalized(project):
        return False
    pythons, abis, platforms = (set(tag.split(".")) for tag in parts[-3:])
    ours = f"{sys.version_info[0]}{sys.version_info[1]}"
    abi = "cp" + ours + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
    binary = f"cp{ours}" in pythons and abi in abis
    pure = bool(pythons & {"py3", f"py{ours}"}) and "none" in abis
    return (binary or pure) and any(platform_ok(tag) for tag in platforms)


def platform_ok(tag: str) -> bool:
    machine = platform.machine().lower()
    if tag == "any" or tag == sysconfig.get_platform().replace("-", "_").replace(".", "_"):
        return True
    return sys.platform.startswith("linux") and re.fullmatch(r"(linux|manylinux\w*)_%s" % re.escape(machine), tag) is not None


def version_key(version: str) -> tuple | None:
    """PEP 440's order for the shapes nightlies carry (X.Y.Z.devYYYYMMDD+cpu); None for a version of another shape."""
    match = VERSION.fullmatch(version)
    if not match:
        return None
    release, phase, number, post, dev, local = match.groups()
    numbers = [int(part) for part in release.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    if phase:
        pre = ({"a": 0, "b": 1, "rc": 2}[phase.lower()], int(number))
    else:
        pre = (-1, 0) if dev is not None and post is None else (3, 0)  # X.devN comes before X's pre-releases
    local_parts = tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in re.split(r"[._-]", local or "") if p)
    return (tuple(numbers), pre, int(post) if post else -1, (0, int(dev)) if dev else (1, 0), local_parts)


def candidates(index: str, project: str) -> list[tuple[str, str, str | None]]:
    """(file name, URL, sha256 or None) of the project's compatible wheels on the index, the newest first."""
    page = index.rstrip("/") + f"/{project}/"
    try:
        with urllib.request.urlopen(page, timeout=60) as answer:
            text = answer.read().decode("utf-8", "replace")
    except (OSError, ValueError) as error:  # urllib's URLError and HTTPError are OSErrors
        raise Refused(f"crcr: the nightly index {page} cannot be read: {error}", WRONG_COMMIT) from error
    links = Links()
    links.feed(text)
    found = []
    for href in links.hrefs:
        url, _, fragment = urllib.parse.urljoin(page, href).partition("#")
        name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        key = version_key(name.split("-")[1]) if compatible(name, project) else None
        if key is not None:
            sha256 = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
            found.append((key, name, url, sha256))
    if not found:
        raise Refused(f"crcr: the nightly index {page} has no {project} wheel for Python {sys.version_info[0]}."
                      f"{sys.version_info[1]} on {platform.machine()}", WRONG_COMMIT)
    found.sort(key=lambda item: item[0], reverse=True)
    return [(name, url, sha256) for _, name, url, sha256 in found]


def download(url: str, name: str, sha256: str | None, folder: Path) -> Path:
    """The file at `url` in a temporary file of `folder`, its SHA-256 checked."""
    digest = hashlib.sha256()
    part = tempfile.NamedTemporaryFile(dir=folder, prefix=".part-", suffix=".whl", delete=False)
    try:
        with part, urllib.request.urlopen(url, timeout=600) as answer:
            for block in iter(lambda: answer.read(BLOCK), b""):
                digest.update(block)
                part.write(block)
        if sha256 and digest.hexdigest() != sha256.lower():
            raise Refused(f"crcr: the nightly wheel {name} from {url} has SHA-256 {digest.hexdigest()}, the index "
                          f"says {sha256}", WRONG_COMMIT)
    except OSError as error:
        os.unlink(part.name)
        raise Refused(f"crcr: the nightly wheel {url} cannot be downloaded: {error}", WRONG_COMMIT) from error
    except BaseException:
        os.unlink(part.name)
        raise
    return Path(part.name)


def git_version_of(wheel: Path, project: str) -> str | None:
    module = f"{project}/version.py"
    try:
        with zipfile.ZipFile(wheel) as archive:
            text = archive.read(module).decode("utf-8", "replace")
    except (KeyError, zipfile.BadZipFile):
        return None
    return (assigned(text, "git_version") or "").lower() or None


def same_commit(one: str, other: str) -> bool:
    return min(len(one), len(other)) >= 7 and (one.startswith(other) or other.startswith(one))


def nightly(options: argparse.Namespace) -> None:
    commit = full_commit(options.commit, "--commit")
    if options.tries < 1:
        raise Refused(f"--tries {options.tries}: at least 1")
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    wrong = []
    for name, url, sha256 in candidates(options.index, options.project)[: options.tries]:
        part = download(url, name, sha256, out)
        its_commit = git_version_of(part, options.project)
        if its_commit and same_commit(its_commit, commit):
            part.chmod(READABLE)
            os.replace(part, out / name)
            print(f"crcr: kept the nightly wheel {name} of commit {its_commit}", flush=True)
            return
        part.unlink()
        its_commit = its_commit or f"unknown (its {options.project}/version.py gives no git_version)"
        # The commits first, short, the wheel last: the relay's commit status shows the line, cut at 140 characters.
        wrong.append(f"crcr: the nightly wheel is of commit {its_commit[:12]}, not {commit[:12]}, the commit tested "
                     f"({name})")
    raise Refused("\n".join(wrong), WRONG_COMMIT)


# ----------------------------------------------------------------------------------------------------------- main


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="crcr_wheel.py", description=__doc__.split("\n\n")[0])
    commands = main.add_subparsers(dest="command", required=True)
    patching = commands.add_parser("patch", help="the reused build's wheels with the changed Python files")
    patching.add_argument("--out", required=True, help="the folder the patched wheels are written to")
    patching.add_argument("--reused", default=os.environ.get("CRCR_REUSED_DIR"),
                          help="the reused build's artifacts (default $CRCR_REUSED_DIR)")
    patching.add_argument("--git-version-in", help="the wheel's module assigning git_version (torch/version.py)")
    patching.add_argument("--commit", default=os.environ.get("CRCR_UPSTREAM_SHA"),
                          help="the commit built (default $CRCR_UPSTREAM_SHA)")
    patching.set_defaults(run=patch)
    fetching = commands.add_parser("nightly", help="the nightly wheel of a commit from a PEP 503 index")
    fetching.add_argument("--index", required=True, help="the simple index (https://download.pytorch.org/whl/nightly/cpu)")
    fetching.add_argument("--commit", required=True, help="the commit tested")
    fetching.add_argument("--out", required=True, help="the folder the wheel is kept in")
    fetching.add_argument("--project", default="torch")
    fetching.add_argument("--tries", type=int, default=2, help="how many of the newest wheels to look at")
    fetching.set_defaults(run=nightly)
    return main


def main(argv: list[str] | None = None) -> int:
    options = parser().parse_args(argv)
    try:
        options.run(options)
    except Refused as refused:
        message = str(refused)
        print(message if message.startswith("crcr:") else f"crcr: {message}", file=sys.stderr, flush=True)
        return refused.code
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Commit-to-verdict latency: the nearest-rank percentiles and the windows (pure), and `crcr latency` as a user runs
it over a real database made by the master's migration and filled by the ledger's own functions."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from clirun import InProcessCrcr
from configfiles import write_backend
from copied_schema import relay_tables
from crcr.cli.latency import duration_text
from crcr.store.commits import CommitRow, Origin, decide, mark_started, record_arrival
from crcr.store.latency import DAY, HOUR, backend_latency, nearest_rank, window
from harness import free_port

MINUTE = 60


# --- the figures, pure ---


@pytest.mark.parametrize(
    "values, percent, expected",
    [
        (list(range(1, 21)), 50, 10),  # rank ceil(0.5 * 20) = 10
        (list(range(1, 21)), 95, 19),  # rank ceil(0.95 * 20) = 19: not the largest
        (list(range(1, 22)), 95, 20),  # rank ceil(19.95) = 20
        (list(range(1, 20)), 95, 19),  # fewer than 20 values: p95 is the largest
        ([10, 20, 30, 40], 50, 20),  # an exact rank is taken as is, never the mean of two values
        ([10, 20, 30], 50, 20),
        ([7], 50, 7),
        ([7], 95, 7),
        ([1, 2, 3], 100, 3),
    ],
)
def test_nearest_rank_percentile(values, percent, expected):
    assert nearest_rank(values, percent) == expected


@pytest.mark.parametrize("values, percent", [([], 50), ([1], 0), ([1], 101)])
def test_nearest_rank_refuses_what_has_no_percentile(values, percent):
    with pytest.raises(ValueError):
        nearest_rank(values, percent)


def test_the_figures_need_neither_buildbot_nor_twisted():
    # A fresh interpreter: this one has them loaded by other tests already.
    probe = (
        "import sys, crcr.store.latency\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'buildbot', 'twisted'}))"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"


def row(seen_at: int, decided_at: int | None, how: str | None = "built", backend: str = "spyre") -> CommitRow:
    """An upstream commit's row, as the ledger leaves it."""
    return CommitRow(id=0, backend=backend, sha="0" * 40, branch="main", seen_at=seen_at, started_at=None,
                     decided_at=decided_at, state="pending" if decided_at is None else "success", description=None,
                     how=how, brid=None, buildid=None, position=1, decided_unbuilt=how == "not_relevant")


NOW = 1_000_000_000


def test_a_window_holds_the_commits_decided_within_it_its_start_included():
    decided = [
        row(NOW - DAY - 100, NOW - DAY, "covered"),  # decided at the window's very start
        row(NOW - 2 * HOUR, NOW - HOUR, "built"),
        row(NOW - DAY - 200, NOW - DAY - 1, "bisected"),  # a second before it
        row(NOW - 3 * HOUR, NOW - 3 * HOUR, "not_relevant"),  # decided unbuilt: counted, no latency of the promise
    ]

    last_day = window("24h", "24 h", DAY, decided, NOW)

    assert (last_day.decided, last_day.p50, last_day.p95, last_day.max) == (3, 100, HOUR, HOUR)
    assert last_day.how == {"built": 1, "covered": 1, "bisected": 0, "forced": 0, "not_relevant": 1}


def test_the_latency_runs_from_seen_to_decided_whatever_the_build_started():
    figures = window("24h", "24 h", DAY, [row(NOW - 3 * HOUR, NOW - HOUR)], NOW)
    assert (figures.p50, figures.p95, figures.max) == (2 * HOUR, 2 * HOUR, 2 * HOUR)


def test_a_window_without_verdicts_has_no_percentiles():
    figures = window("24h", "24 h", DAY, [row(NOW - 3 * DAY, NOW - 2 * DAY)], NOW)
    assert (figures.decided, figures.p50, figures.p95, figures.max) == (0, None, None, None)
    assert set(figures.how.values()) == {0}


def test_a_backend_has_both_windows_and_its_oldest_pending_commit_age():
    decided = [row(NOW - 3 * DAY, NOW - 2 * DAY, "forced"), row(NOW - 600, NOW - 60)]
    pending = [row(NOW - 2 * HOUR, None, None), row(NOW - 5 * HOUR, None, None)]

    figures = backend_latency("spyre", decided, pending, NOW)

    assert [(w.name, w.decided, w.max) for w in figures.windows] == [("24h", 1, 540), ("7d", 2, DAY)]
    assert (figures.pending, figures.oldest_pending_age) == (2, 5 * HOUR)
    assert backend_latency("idle", [], [], NOW).oldest_pending_age is None


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0, "0s"), (45, "45s"), (60, "1m"), (12 * MINUTE + 5, "12m 5s"), (HOUR, "1h"),
        (HOUR + 12 * MINUTE + 59, "1h 12m"), (2 * HOUR + 30, "2h"), (DAY, "1d"), (3 * DAY + 4 * HOUR + 5 * MINUTE, "3d 4h"), (40 * DAY, "40d"),
    ],
)
def test_durations_read_as_their_two_largest_units(seconds, text):
    assert duration_text(seconds) == text


# --- crcr latency over a real database ---


def add_commit(conn, backend: str, n: int, seen: int, started: int | None = None, decided: int | None = None,
               how: str = "built", upstream: bool = True) -> None:
    """A commit as the ledger records it: arrival (with its place in upstream order unless no upstream change
    brought it), its build's start, its verdict."""
    sha = f"{n:040x}"
    record_arrival(conn, backend, sha, "main", seen_at=seen, brid=n, origin=Origin(position=n if upstream else None))
    if started is not None:
        mark_started(conn, n, started_at=started)
    if decided is not None:
        decide(conn, backend, sha, "success", "Passed", how, buildid=n, decided_at=decided)


def fill_ledger(conn, now: int) -> None:
    # spyre, decided in the last 24 h: 2h 10m, 1h 12m and 44m 45s from seen to verdict
    add_commit(conn, "spyre", 1, seen=now - 3 * HOUR - 10 * MINUTE, started=now - 3 * HOUR, decided=now - HOUR)
    add_commit(conn, "spyre", 2, seen=now - 2 * HOUR, started=now - HOUR - 30 * MINUTE, decided=now - 48 * MINUTE,
               how="covered")
    add_commit(conn, "spyre", 3, seen=now - 50 * MINUTE, started=now - 40 * MINUTE, decided=now - 5 * MINUTE - 15,
               how="bisected")
    # and earlier in the last 7 days: 1d 4h and 45s
    add_commit(conn, "spyre", 4, seen=now - 3 * DAY, started=now - 2 * DAY, decided=now - 2 * DAY + 4 * HOUR)
    add_commit(conn, "spyre", 5, seen=now - 3 * DAY - 45, started=now - 3 * DAY - 30, decided=now - 3 * DAY,
               how="forced")
    # decided at once, unbuilt, as not relevant, then forced: the forced verdict counts, with no latency (not 0 s)
    sha = f"{12:040x}"
    record_arrival(conn, "spyre", sha, "main", seen_at=now - 4 * DAY, origin=Origin(position=12))
    decide(conn, "spyre", sha, "success", "Not relevant", "not_relevant", buildid=None, decided_at=now - 4 * DAY)
    decide(conn, "spyre", sha, "failure", "Failed", "forced", buildid=12, decided_at=now - 2 * DAY)
    add_commit(conn, "spyre", 6, seen=now - 10 * DAY, started=now - 10 * DAY, decided=now - 9 * DAY)  # too old
    # forced, older than the relay's first poll: a user's request, in no figure however quickly decided
    add_commit(conn, "spyre", 11, seen=now - 10 * MINUTE, started=now - 10 * MINUTE, decided=now - 10 * MINUTE + 3,
               how="forced", upstream=False)
    # still pending: one building, one queued
    add_commit(conn, "spyre", 7, seen=now - 2 * HOUR - 5 * MINUTE, started=now - HOUR)
    add_commit(conn, "spyre", 8, seen=now - 10 * MINUTE)
    # a backend whose file is gone, decided an hour ago; one whose file is gone and whose commits are all old
    add_commit(conn, "gone", 9, seen=now - HOUR - 5 * MINUTE, started=now - HOUR - 4 * MINUTE, decided=now - HOUR)
    add_commit(conn, "ancient", 10, seen=now - 30 * DAY, started=now - 30 * DAY, decided=now - 29 * DAY)


@pytest.fixture
def master_dir(tmp_path):
    """A master directory whose database has the relay's tables, as the master leaves it after its start."""
    basedir = tmp_path / "master"
    basedir.mkdir()
    engine = sa.create_engine(f"sqlite:///{basedir / 'state.sqlite'}")
    with engine.connect() as conn:
        relay_tables(conn)
        fill_ledger(conn, int(time.time()))
    engine.dispose()
    return basedir


@pytest.fixture
def crcr(monkeypatch, capsys, tmp_path):
    backends = tmp_path / "backends"
    write_backend(backends, "spyre", level="L2", device="spyre")
    write_backend(backends, "idle", level="L2", device="idle")
    return InProcessCrcr(monkeypatch, capsys, env={"CRCR_BACKENDS_DIR": str(backends)})


def test_latency_of_every_backend_over_both_windows(crcr, master_dir):
    result = crcr("latency", "--basedir", master_dir)

    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "gone\n"
        "  last 24 h:   1 commit decided (1 built); latency p50 5m, p95 5m, max 5m\n"
        "  last 7 days: 1 commit decided (1 built); latency p50 5m, p95 5m, max 5m\n"
        "  pending: none\n"
        "idle\n"
        "  no verdicts in the last 24 h\n"
        "  no verdicts in the last 7 days\n"
        "  pending: none\n"
        "spyre\n"
        "  last 24 h:   3 commits decided (1 built, 1 covered, 1 bisected); "
        "latency p50 1h 12m, p95 2h 10m, max 2h 10m\n"
        "  last 7 days: 6 commits decided (2 built, 1 covered, 1 bisected, 2 forced); "
        "latency p50 1h 12m, p95 1d 4h, max 1d 4h\n"
        "  pending: 2 commits, the oldest seen 2h 5m ago\n"
    )
    assert result.stderr == ""


def test_latency_of_one_backend(crcr, master_dir):
    result = crcr("latency", "idle", "--basedir", master_dir)

    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "idle\n  no verdicts in the last 24 h\n  no verdicts in the last 7 days\n  pending: none\n"
    )


def test_a_backend_without_a_file_is_known_by_its_commits_however_old(crcr, master_dir):
    result = crcr("latency", "ancient", "--basedir", master_dir)

    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "ancient\n  no verdicts in the last 24 h\n  no verdicts in the last 7 days\n  pending: none\n"
    )


def test_latency_as_json(crcr, master_dir):
    before = int(time.time())
    result = crcr("latency", "spyre", "--json", "--basedir", master_dir)

    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert before <= figures["now"] <= time.time()
    spyre = figures["backends"]["spyre"]
    assert list(figures["backends"]) == ["spyre"]
    assert spyre["windows"] == {
        "24h": {"seconds": DAY, "decided": 3, "how": {"built": 1, "covered": 1, "bisected": 1, "forced": 0,
                                                                   "not_relevant": 0},
                "p50": HOUR + 12 * MINUTE, "p95": 2 * HOUR + 10 * MINUTE, "max": 2 * HOUR + 10 * MINUTE},
        "7d": {"seconds": 7 * DAY, "decided": 6, "how": {"built": 2, "covered": 1, "bisected": 1, "forced": 2,
                                                                       "not_relevant": 0},
               "p50": HOUR + 12 * MINUTE, "p95": DAY + 4 * HOUR, "max": DAY + 4 * HOUR},
    }
    assert spyre["pending"]["count"] == 2
    # seen 2h 5m before the ledger was filled, a moment before the command ran
    assert 2 * HOUR + 5 * MINUTE <= spyre["pending"]["oldest_age"] < 2 * HOUR + 6 * MINUTE


def test_json_of_a_backend_without_verdicts_has_null_figures(crcr, master_dir):
    result = crcr("latency", "idle", "--json", "--basedir", master_dir)

    idle = json.loads(result.stdout)["backends"]["idle"]
    assert idle["windows"]["24h"] == {
        "seconds": DAY, "decided": 0, "how": {"built": 0, "covered": 0, "bisected": 0, "forced": 0,
                                                   "not_relevant": 0},
        "p50": None, "p95": None, "max": None,
    }
    assert idle["pending"] == {"count": 0, "oldest_age": None}


# --- what is refused ---


def test_an_unknown_backend_is_named(crcr, master_dir, tmp_path):
    result = crcr("latency", "nope", "--basedir", master_dir)

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"error: no backend 'nope': no {tmp_path / 'backends' / 'nope.yaml'} and no commits of it in the relay's "
        "database (backend files: idle, spyre)\n"
    )


def test_a_master_directory_without_a_database_is_said_so_and_left_alone(crcr, tmp_path):
    basedir = tmp_path / "never-started"
    basedir.mkdir()

    result = crcr("latency", "--basedir", basedir)

    assert result.returncode == 1
    assert result.stderr == (
        f"error: no database at {basedir / 'state.sqlite'}: the master creates it when it first starts\n"
    )
    assert list(basedir.iterdir()) == [], "no empty database was created"


def test_a_database_without_the_relays_tables_is_said_so(crcr, tmp_path):
    basedir = tmp_path / "master"
    basedir.mkdir()
    engine = sa.create_engine(f"sqlite:///{basedir / 'state.sqlite'}")
    with engine.begin() as conn:  # a database from before the relay had tables of its own
        conn.execute(sa.text("CREATE TABLE builds (id INTEGER PRIMARY KEY)"))
    engine.dispose()

    result = crcr("latency", "--basedir", basedir)

    assert result.returncode == 1
    assert result.stderr == (
        "error: the database has no crcr_commits table: the master creates the relay's tables when it starts "
        "(crcr master start)\n"
    )


def test_a_file_that_is_no_database_is_said_so(crcr, tmp_path):
    basedir = tmp_path / "master"
    basedir.mkdir()
    (basedir / "state.sqlite").write_text("not a database\n" * 100)

    result = crcr("latency", "--basedir", basedir)

    assert result.returncode == 1
    assert result.stderr.startswith(f"error: cannot read the database sqlite:///{basedir / 'state.sqlite'}: ")
    assert "Traceback" not in result.stderr


def test_a_relative_database_path_needs_the_master_directory(crcr):
    result = crcr("latency")

    assert result.returncode == 1
    assert result.stderr == (
        "error: the database sqlite:///state.sqlite (CRCR_DB_URL) is a path relative to the master directory: "
        "give --basedir\n"
    )


def test_an_unreachable_database_server_is_said_so_without_its_password(crcr):
    port = free_port()  # nothing listens there

    result = crcr("latency", CRCR_DB_URL=f"postgresql://crcr:s3cret@127.0.0.1:{port}/buildbot")

    assert result.returncode == 1
    shown = f"postgresql://crcr:***@127.0.0.1:{port}/buildbot"
    assert result.stderr.startswith(f"error: cannot open the database {shown}: ")
    assert "Connection refused" in result.stderr
    assert "s3cret" not in result.stderr


# --- on PostgreSQL, as a real deployment ---


@pytest.mark.e2e
def test_latency_on_postgresql(crcr, postgres):
    engine = sa.create_engine(postgres.url)
    with engine.connect() as conn:
        relay_tables(conn)
        fill_ledger(conn, int(time.time()))
    engine.dispose()

    result = crcr("latency", "spyre", CRCR_DB_URL=postgres.url)

    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "spyre\n"
        "  last 24 h:   3 commits decided (1 built, 1 covered, 1 bisected); "
        "latency p50 1h 12m, p95 2h 10m, max 2h 10m\n"
        "  last 7 days: 6 commits decided (2 built, 1 covered, 1 bisected, 2 forced); "
        "latency p50 1h 12m, p95 1d 4h, max 1d 4h\n"
        "  pending: 2 commits, the oldest seen 2h 5m ago\n"
    )

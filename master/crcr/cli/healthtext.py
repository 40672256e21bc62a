"""The relay's health figures as `crcr status` words them, from the JSON the running master answers (the shapes of
RelayHealth's summary, backend and commit: docs/health.md). Only wording here: every figure is the relay's, so the
command says what the pages show. Links are the UI's routes made absolute with the relay's web address."""

from __future__ import annotations

from crcr.cli.latency import duration_text
from crcr.cli.wording import counted, utc
from crcr.health.backend import PULL_REQUEST_LEVELS
from crcr.health.links import bisection_page
from crcr.health.percentages import percent
from crcr.health.readiness import NO_JOBS
from crcr.health.stage_builds import cache_figures_text
from crcr.health.verdicts import judged
from crcr.suites.results import SHORT_SHA

NONE = "-"  # a figure that has no value (no verdict, no build in the range)
# The backend's state (health/state.py) as the table and the lines say it.
STATE_WORDS = {"failing": "failing", "known_failures": "known failures", "error": "error", "passing": "passing",
               None: "no verdict"}


def summary_lines(summary: dict, web_url: str) -> list[str]:
    """One line per backend, in the relay's order (worst first), under a header."""
    now = summary["now"]
    rows = [("BACKEND", "STATE", "SINCE", "P50", "P95", "PASS RATE", "BUILDS", "TIMEOUTS", "QUEUE", "UNITS",
             "FAILING TESTS")]
    for row in summary["backends"]:
        latency, queue = row["latency"], row["queue"]
        since = _since(row)
        rows.append((
            row["backend"],
            STATE_WORDS[row["state"]],
            f"{_short(since[0])}, {_ago(now, since[1])}" if since else NONE,
            _duration(latency["p50"]),
            _duration(latency["p95"]),
            f"{_percent(row['pass_rate'])} ({row['verdicts']['success']}/{judged(row['verdicts'])})"
            if row["pass_rate"] is not None else NONE,
            str(row["builds"]),
            f"{row['timeouts']} ({_percent(row['timeout_rate'])})" if row["builds"] else NONE,
            f"{queue['length']}, oldest {_short(queue['oldest_sha'])} {duration_text(queue['oldest_age'])} ago"
            if queue["length"] else "0",
            f"{row['units']['connected']}/{row['units']['declared']}" if row["units"]["declared"] else "inactive",
            str(row["failing_tests"]),
        ))
    title = f"Backends, worst first; latency, pass rate, builds and timeouts over the last {summary['range']}"
    return [f"{title} ({_link(web_url, '#/health')}):", *table(rows), *stage_build_lines(summary, summary["range"])]


def stage_build_lines(answer: dict, over: str) -> list[str]:
    """The shared builds' and build stages' figures of a summary or a backend page, a line each; nothing when there
    are none (or a master older than this crcr gives none)."""
    stages = answer.get("stage_builds", [])
    return _section(f"shared builds and build stages over the last {over}", [stage_build_text(m) for m in stages]
                    ) if stages else []


def stage_build_text(stage: dict) -> str:
    """'torch-cpu (shared build): 14 builds, p50 24m, p95 31m, 6 of 14 reused (42.9%), ccache hit rate 92%'."""
    name = f"{stage['name']} ({stage['kind']})"
    if not stage["builds"]:
        return f"{name}: no successful build"
    reused = (f"{stage['reused']} of {stage['told']} reused ({percent(stage['reused_rate'])})" if stage["told"]
              else "no reuse figures")
    cache = stage["cache"]
    cache_text = ("no cache figures" if cache is None else f"{cache['kind']}: nothing compiled"
                  if cache["hit_rate"] is None else f"{cache['kind']} hit rate {percent(cache['hit_rate'])}")
    return (f"{name}: {counted(stage['builds'], 'build')}, p50 {duration_text(stage['p50'])}, "
            f"p95 {duration_text(stage['p95'])}, {reused}, {cache_text}")


def l3_readiness_lines(readiness: dict | None) -> list[str]:
    """The verdict of PyTorch's HUD's L3 criteria (health/readiness.py), then each criterion beside its target over
    the promotion and demotion windows, 'FAILS' after each value that misses it."""
    if readiness is None:
        return []
    lines = [f"L3 readiness (PyTorch's HUD): {readiness['verdict']}"]
    if readiness["state"] == NO_JOBS:
        return lines
    demotion = {c["name"]: c for c in readiness["demotion"]}
    rows = [("CRITERION", "TARGET", "14 DAYS", "7 DAYS")]
    rows += [(c["label"], c["target_text"], _criterion_text(c),
              _criterion_text(demotion[c["name"]]) if c["name"] in demotion else "(promotion only)")
             for c in readiness["promotion"]]
    return lines + [f"  {line}" for line in table(rows)]


def disabled_upstream_lines(disabled: dict | None) -> list[str]:
    """One line of PyTorch's disabled tests on the backend (health/disabled.py): how many its latest runs skipped, and
    how many of the list's entries apply to it, or the list's last problem."""
    if disabled is None:
        return []
    listed = disabled["list"]
    state = ("not followed" if listed is None else f"{listed['applying']} of {listed['entries']} listed apply"
             + (f"; last problem: {listed['problem']}" if listed["problem"] else ""))
    return [f"disabled upstream: {counted(len(disabled['tests']), 'test')} skipped in its latest runs ({state})"]


def _criterion_text(criterion: dict) -> str:
    return criterion["value_text"] + ("" if criterion["passes"] else " FAILS")


def masters_lines(masters: list[dict], now: int) -> list[str]:
    """The summary's masters under a header, by name: up, silent or stopped, their newest sign of life, which one
    leads; nothing when there are none (a master older than this crcr names none)."""
    if not masters:
        return []
    rows = [("MASTER", "STATE", "LAST SIGN OF LIFE", "LEADER")]
    rows += [(m["name"], m["state"], _ago(now, m["last_active"]),
              f"yes, for {duration_text(max(0, now - m['leader_since']))}" if m["leader"] else NONE)
             for m in masters]
    title = ("Masters; the leader runs the relay's once-per-event duties:" if any(m["leader"] for m in masters)
             else "Masters; none leads now (the leader's lease lapsed: a live master takes it within seconds):")
    return [title, *table(rows)]


def backend_lines(page: dict, web_url: str) -> list[str]:
    """The backend page's figures: its row, the three windows, failing and flaky tests, bisections, and for the
    levels that build pull requests, their builds. (The charts and the commit matrix are the page's.)"""
    now, over = page["now"], page["range"]
    lines = [f"{page['backend']} ({page['level']}, {page['device']}): {page['description']} "
             f"({_link(web_url, page['page'])})"]
    lines += _state_lines(page, now)
    lines += _latest_lines(page["latest"], now, web_url)
    lines.append(f"last {over}: {_decided_text(page)}; {_builds_text(page)}")
    units = page["units"]
    units_text = (f"units {units['connected']} of {units['declared']} connected" if units["declared"]
                  else "units: inactive, no host offers its device")
    lines.append(f"now: {_queue_text(page['queue'])}; {units_text}; {counted(page['failing_tests'], 'failing test')}")
    # Started and still pending, so not in the queue: what each waits for (children waiting for units, a bisection);
    # a master older than this crcr gives no started_at.
    lines += [f"  {_short(c['sha'])}, started {_ago(now, c['started_at'])}: {c['description']}"
              for c in page["matrix"]["commits"] if c["state"] == "pending" and c.get("started_at") is not None]
    lines += table([("RANGE", "DECIDED", "P50", "P95", "PASS RATE")] + [
        (name, str(w["decided"]), _duration(w["p50"]), _duration(w["p95"]), _percent(w["pass_rate"]))
        for name, w in page["windows"].items()
    ])
    lines += stage_build_lines(page, over)
    lines += l3_readiness_lines(page.get("l3_readiness"))  # a master older than this crcr gives none
    lines += disabled_upstream_lines(page.get("disabled_upstream"))  # as l3_readiness
    lines += _section("failing tests", [_failing_text(t, now, web_url) for t in page["failing"]], with_count=True)
    lines += _section(f"flakiest tests over the last {over}", [
        f"{t['test']} ({t['suite']}): flaky in {t['flaky_runs']} of {counted(t['runs'], 'run')}, "
        f"the last {_ago(now, t['last_flaky_at'])}" for t in page["flaky"]])
    lines += _section("bisections", [_bisection_text(b, now, web_url) for b in page["bisections"]])
    if page["level"] in PULL_REQUEST_LEVELS:
        lines += _section("pull-request builds", [_pull_request_text(pr, now, web_url) for pr in page["pull_requests"]])
    return lines


def commit_lines(commit: dict, web_url: str) -> list[str]:
    """One commit of a backend: its verdict, how it was decided, when, its build, failing tests and suites."""
    verdict = f"{commit['state']}: {commit['description']}" if commit["description"] else commit["state"]
    lines = [f"{commit['backend']} {commit['sha']}: {verdict}", f"decided: {_how_text(commit)}"]
    times = f"seen {utc(commit['seen_at'])}"
    if commit["decided_at"] is not None:
        times += f", decided {utc(commit['decided_at'])}: " + (
            f"no latency, {_no_latency_text(commit)}"
            if commit["latency"] is None else f"latency {duration_text(commit['latency'])}")
    lines.append(times)
    if commit["build_url"]:
        asked_only = commit["build_kind"] == "bisection"
        bisection = " (the bisection's build of it: only the tests it asked)" if asked_only else ""
        lines.append(f"build: {_link(web_url, commit['build_url'])}{bisection}")
    by = f" by {commit['author']}" if commit["author"] else ""
    # Its web page, or its sha where the upstream has none (a local repository: config/upstream_web.py).
    page = commit["commit_url"] or commit["sha"]
    lines.append(f"commit: {page}" + (f' "{commit["title"]}"{by}' if commit["title"] else ""))
    if commit["bisections"]:
        lines.append("bisections: " + ", ".join(
            f"{b} ({_link(web_url, bisection_page(b))})" for b in commit["bisections"]))
    if commit["failing"]:
        lines += _section("failing tests", [
            f"{t['test']} ({t['suite']}): {t['outcome']}" + (", new" if t["new"] else "") for t in commit["failing"]
        ], with_count=True)
    if commit["flaky"]:
        lines.append("flaky tests: " + ", ".join(commit["flaky"]))
    if commit["cells"]:
        lines += _section("suites", [f"{suite}: {_cell_text(cell)}" for suite, cell in commit["cells"].items()])
    if commit.get("made"):  # a master older than this crcr says nothing of them
        lines += _section("what its suites ran on", [_made_text(made) for made in commit["made"]])
    return lines


def _made_text(made: dict) -> str:
    """'torch-cpu (shared build): built in full: changes aten/…, 24m 5s; ccache: 301 hits, 1 miss (99% hit rate)'."""
    figures = f"; {cache_figures_text(made['cache'])}" if made["cache"] else ""
    return (f"{made['name']} ({made['kind']}): {made['made'] or 'built'}, {duration_text(made['seconds'])}"
            f"{figures}")


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as lines of left-aligned columns two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _since(row: dict) -> tuple[str, int] | None:
    """(sha, time) the backend's state stands since: the first failing commit of its longest failing test, else
    the first commit of its run of verdicts."""
    if row["failing_since"]:
        return row["failing_since"]["sha"], row["failing_since"]["since"]
    latest = row["latest"]
    return (latest["since_sha"], latest["since"]) if latest else None


def _state_lines(row: dict, now: int) -> list[str]:
    """The backend's state, and since which commit tests fail at its tip (whatever its commits' verdicts say)."""
    line = f"state: {STATE_WORDS[row['state']]}"
    first = row["failing_since"]
    if first:
        line += (f", {counted(row['failing_tests'], 'test')} failing since {_named(first['sha'], first['title'])}, "
                 f"{_ago(now, first['since'])}")
    return [line]


def _latest_lines(latest: dict | None, now: int, web_url: str) -> list[str]:
    if latest is None:
        return ["latest verdict: none yet"]
    said = f": {latest['description']}" if latest["description"] else ""
    state = f"{latest['state']} (infrastructure)" if latest["infrastructure"] else latest["state"]
    lines = [f"latest verdict: {state} at {_named(latest['sha'], latest['title'])}, decided "
             f"{_ago(now, latest['decided_at'])}{said}",
             f"  {latest['state']} since {_named(latest['since_sha'], latest['since_title'])}, "
             f"{_ago(now, latest['since'])}"]
    if latest["build_url"]:
        lines.append(f"  its build: {_link(web_url, latest['build_url'])}")
    return lines


def _decided_text(row: dict) -> str:
    latency, verdicts = row["latency"], row["verdicts"]
    decided = sum(verdicts.values())
    if not decided:
        return "no commit decided"
    counts = ", ".join(f"{verdicts[state]} {state.replace('_', ' ')}" for state in verdicts)
    over = judged(verdicts)
    of_judged = f" of the {over} judged" if over != decided else ""
    return (f"{counted(decided, 'commit')} decided ({counts}), pass rate {_percent(row['pass_rate'])}{of_judged}; "
            f"latency p50 {duration_text(latency['p50'])}, p95 {duration_text(latency['p95'])}")


def _builds_text(row: dict) -> str:
    if not row["builds"]:
        return "0 builds"
    return f"{counted(row['builds'], 'build')}, {row['timeouts']} timed out ({_percent(row['timeout_rate'])})"


def _queue_text(queue: dict) -> str:
    if not queue["length"]:
        return "no commit queued"
    return (f"{counted(queue['length'], 'commit')} queued, the oldest {_short(queue['oldest_sha'])} for "
            f"{duration_text(queue['oldest_age'])}")


def _failing_text(test: dict, now: int, web_url: str) -> str:
    bad = test["first_bad"]
    culprit = (f"first bad commit {_short(bad['sha'])} (bisection {bad['bisection']}, "
               f"{_link(web_url, bad['bisection_url'])})" if bad else "not bisected")
    return (f"{test['test']} ({test['suite']}): failing for {counted(test['builds_failing'], 'build')}, since "
            f"{_named(test['first_failing_sha'], test['first_failing_title'])} {_ago(now, test['since'])}; {culprit}")


def _bisection_text(bisection: dict, now: int, web_url: str) -> str:
    culprits = bisection["culprits"]
    found = (f"{'culprit' if len(culprits) == 1 else 'culprits'} {', '.join(map(_short, culprits))}"
             if culprits else "no culprit yet")
    ended = f", ended {_ago(now, bisection['ended_at'])}" if bisection["ended_at"] is not None else ""
    return (f"{bisection['id']} {bisection['state']}: good {_short(bisection['good_sha'])}, bad "
            f"{_short(bisection['bad_sha'])}; {found}; started {_ago(now, bisection['started_at'])}{ended} "
            f"({_link(web_url, bisection['url'])})")


def _pull_request_text(pr: dict, now: int, web_url: str) -> str:
    title = f" {pr['title']}" if pr["title"] else ""
    links = ", ".join(link for link in (_link(web_url, pr["build_url"]), pr["url"]) if link)
    return f"#{pr['number']}{title} at {_short(pr['sha'])}: {pr['results']} {_ago(now, pr['complete_at'])} ({links})"


def _how_text(commit: dict) -> str:
    how = commit["how"]
    if how is None:
        return "not yet, " + ("building" if commit["started_at"] is not None else "waiting for a unit")
    if how == "covered":
        return f"covered by the build of {_short(commit['covered_by'])}, a newer commit"
    return {"built": "built, by its own build", "forced": "forced, by a build asked for",
            "not_relevant": "unbuilt: it changes nothing the backend builds or runs"}.get(how, how)


def _no_latency_text(commit: dict) -> str:
    """Why a decided commit has no time to verdict (docs/health.md, Conventions)."""
    if not commit["decided_unbuilt"]:
        return "a build asked for a commit no upstream push brought counts in no figure"
    if commit["how"] == "not_relevant":
        return "decided unbuilt, as not relevant"
    return "decided unbuilt at first (not relevant); a build asked for since gave its verdict, not a time to verdict"


def _cell_text(cell: dict) -> str:
    if cell["timed_out"]:
        return f"{cell['results']}, timed out"
    counts = f"{cell['passed']} passed, {cell['failed']} failed, {cell['flaky']} flaky, {cell['skipped']} skipped"
    return f"{cell['results']}: {counts}" + (f", {cell['new']} new" if cell["new"] else "")


def _section(title: str, items: list[str], with_count: bool = False) -> list[str]:
    if not items:
        return [f"{title}: none"]
    return [f"{title} ({len(items)}):" if with_count else f"{title}:", *(f"  {item}" for item in items)]


def _link(web_url: str, route: str) -> str:
    return f"{web_url.rstrip('/')}/{route}"


def _short(sha: str) -> str:
    return sha[:SHORT_SHA]


def _named(sha: str, title: str | None) -> str:
    """'1a2b3c4d5e "Fix the add kernel"', or the short sha alone when the title is unknown."""
    return f'{_short(sha)} "{title}"' if title else _short(sha)


def _ago(now: int, at: int) -> str:
    return f"{duration_text(max(0, now - at))} ago"


def _duration(seconds: int | None) -> str:
    return NONE if seconds is None else duration_text(seconds)


def _percent(rate: float | None) -> str:
    return NONE if rate is None else percent(rate)

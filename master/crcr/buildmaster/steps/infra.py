"""Telling a suite's run that hit the hardware from one its tests judge (docs/hardware-failures.md): the lines of
its output matching a declared pattern, outside the tests' own reports unless the pattern says `in_tests`; its
process killed by a declared signal while no test ran; the stall watchdog, where declared."""

from __future__ import annotations

import re
import signal as signals
from dataclasses import dataclass

from buildbot.process.logobserver import LogLineObserver
from junitparser import Error, Failure, JUnitXml, SystemErr, SystemOut, TestSuite

from crcr.config.loader import InfraRules

MAX_LINES = 20  # of a failure's matched lines, kept with it
# The worker's header when the command's process is killed by a signal (buildbot_worker's runprocess).
KILLED = re.compile(r"process killed by signal (\d+)")
SHELL_SIGNAL_BASE = 128  # a shell reports its child killed by signal N as the exit code 128 + N


@dataclass(frozen=True)
class InfraSetup:
    """What a suite's step needs to tell a run that hit the hardware and to act on it: the rules, the backend its
    failures are recorded for, and the units of its device (a request that failed on each has none to go to)."""

    rules: InfraRules
    backend: str
    units: tuple[str, ...]
    pause_after: int = 3  # the device's: failures in a row after which a unit is taken out (units_out.py)
    identify: str | None = None  # the device's command that says which card a unit is
    health_check: str | None = None  # the device's command a unit must pass before each build


def try_text(what: str, unit: str, tries: int, of: int) -> str:
    return f"infrastructure: {what} on {unit} (try {tries} of {of}); built again on another unit"


def final_text(what: str, units: list[str], tries: int) -> str:
    return f"infrastructure: {what} on {', '.join(units)}, {tries} {'try' if tries == 1 else 'tries'}"


@dataclass(frozen=True)
class InfraFailure:
    """Why a run counts as hitting the hardware: its kind, what matched ('RAS::VFIO::DeviceOpenFail', 'SIGSEGV',
    'no output for 900 s'), and the lines that showed it."""

    kind: str  # "pattern", "signal" or "stall"
    what: str
    lines: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"kind": self.kind, "what": self.what, "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: dict) -> InfraFailure:
        return cls(data["kind"], data["what"], tuple(data.get("lines", ())))


class OutputWatch(LogLineObserver):
    """Follows a step's output as it comes: the lines matching any of the patterns (what each matched), and the
    signal the worker says killed the command."""

    def __init__(self, rules: InfraRules):
        super().__init__()
        self.patterns = [(re.compile(p.pattern), p.in_tests) for p in rules.patterns]
        # (line, ((what a pattern matched, its in_tests), ...)): every pattern's, since a later one may say in_tests
        self.matched: list[tuple[str, tuple[tuple[str, bool], ...]]] = []
        self.signal: int | None = None

    def outLineReceived(self, line: str) -> None:
        self._look_at(line)

    def errLineReceived(self, line: str) -> None:
        self._look_at(line)

    def headerLineReceived(self, line: str) -> None:
        if killed := KILLED.search(line):
            self.signal = int(killed[1])

    def _look_at(self, line: str) -> None:
        if len(self.matched) >= MAX_LINES:
            return
        if found := tuple((match[0], in_tests) for pattern, in_tests in self.patterns
                          if (match := pattern.search(line))):
            self.matched.append((line.rstrip(), found))


def signal_name(number: int | None) -> str | None:
    try:
        return signals.Signals(number).name if number is not None else None
    except ValueError:
        return None


def killed_by(header_signal: int | None, rc: int | None) -> str | None:
    """The signal that killed the suite's process: the worker's header, or the exit code a shell gives a child
    it lost to one (128 + N), or a negative return code."""
    if header_signal is not None:
        return signal_name(header_signal)
    if rc is not None and rc < 0:
        return signal_name(-rc)
    if rc is not None and rc > SHELL_SIGNAL_BASE:
        return signal_name(rc - SHELL_SIGNAL_BASE)
    return None


def tests_text(junit: bytes | None) -> str:
    """What the tests themselves reported in the JUnit XML: their failures' and errors' messages and text, their
    captured output."""
    if not junit:
        return ""
    try:
        xml = JUnitXml.fromstring(junit)
    except Exception:  # an unreadable file tells nothing of the tests; the verdict says what is wrong with it
        return ""
    parts = []
    for suite in [xml] if isinstance(xml, TestSuite) else list(xml):
        for case in suite:
            for result in case.result:
                if isinstance(result, (Failure, Error)):
                    parts += [result.message or "", result.text or ""]
            parts += [element.text or "" for element in case.iterchildren(SystemOut)]
            parts += [element.text or "" for element in case.iterchildren(SystemErr)]
    return "\n".join(parts)


def recognise(rules: InfraRules, watch: OutputWatch, rc: int | None, running_test: str | None, junit: bytes | None,
              stalled: bool, is_pytest: bool) -> InfraFailure | None:
    """The infrastructure failure a suite's run shows, if any: a declared pattern (outside the tests' reports
    unless `in_tests`), a stall where declared, or a declared signal while no test ran (known for pytest suites
    only: the plugin names the test that runs; a command suite's signal is its tests')."""
    reported = tests_text(junit) if any(not in_tests for _, matches in watch.matched for _, in_tests in matches) else ""
    # What a test reported is the test's wherever pytest prints it again (its traceback, the summary's line); a line
    # counts when any pattern matching it does.
    found = [(line, counting[0]) for line, matches in watch.matched
             if (counting := [what for what, in_tests in matches if in_tests or what not in reported])]
    if found:
        return InfraFailure("pattern", found[0][1], tuple(line for line, _ in found))
    if stalled and rules.stall:  # before the signal: the watchdog's own kill
        return InfraFailure("stall", "no output", ("the run stalled: the device hung",))
    killed = killed_by(watch.signal, rc)
    if is_pytest and killed in rules.signals and running_test is None:
        return InfraFailure("signal", killed, (f"the process was killed by {killed} while no test ran",))
    return None

"""What a running pytest suite tells before it ends (docs/relevance.md): its first new failure, or else a known
failure that passes, as the crcr_order plugin names each test's outcome when it ends, in the file the suite's step
follows as its `outcomes` log (never the suite's output, which its tests write).

The commit's status becomes pending "failing: <test> (still running)" (or "fixed: <test> (still running)"), the
ledger's pending description says the same (`crcr status BACKEND SHA`), and so does the suite's step on the build
page. The verdict still comes once, when the build ends, from the whole run compared with its baseline: a failure
told early may yet be the hardware's (the run is then void and made again) and a pass only one test's.

A bisection is not started early, even with `queue: newest`: it starts when the build ends, with every new failure
the build found, so that one bisection's builds ask about them all; and only once the run proved not to have hit the
hardware, whose failures would send it after a culprit that is not there."""

from __future__ import annotations

from buildbot.process.logobserver import LogLineObserver
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.steps.unit_checks import build_url
from crcr.buildmaster.util.relay_services import commit_ledger
from crcr.github.status_text import told_early
from crcr.shipped.crcr_order import FAILED_LINE, PASSED_LINE
from crcr.store.service import relay_store

EARLY_LOG = "told early"
BISECTION_NOTE = ("A bisection, when this build stands for queued commits too (queue: newest), starts when the "
                  "build ends, with every new failure it found: one bisection asks about them all, and only a run "
                  "that did not hit the hardware sends it after a culprit.\n")


class EarlyNews(LogLineObserver):
    """Follows the plugin's outcomes log; tells `backend`'s commit status the first new failure (a test failing that
    is not among `known`, those failing at the tip, nor in `quarantined`, whose failures decide nothing), or, while
    none came, the first known failure that passes."""

    def __init__(self, step, backend: str, known: set[str], quarantined: set[str]):
        super().__init__()
        self.step, self.backend, self.known, self.quarantined = step, backend, known, quarantined
        self.said: str | None = None  # what was told last
        self.failing: str | None = None  # the first new failure, once told
        self.telling: list[defer.Deferred] = []

    def outLineReceived(self, line: str) -> None:
        if line.startswith(FAILED_LINE):
            test = line[len(FAILED_LINE):].strip()
            if self.failing is None and test not in self.known and test not in self.quarantined:
                self.failing = test
                self._tell(told_early("failing", test))
        elif line.startswith(PASSED_LINE):
            test = line[len(PASSED_LINE):].strip()
            if self.said is None and test in self.known:
                self._tell(told_early("fixed", test))

    def _tell(self, text: str) -> None:
        self.said = text
        self.step.updateSummary()
        telling = self._told(text)
        telling.addErrback(log.err, f"crcr: telling '{text}'")
        self.telling.append(telling)

    @defer.inlineCallbacks
    def _told(self, text: str):
        step, backend, sha = self.step, self.backend, self.step.getProperty("got_revision")
        yield step.addCompleteLog(f"{EARLY_LOG}: {text.split(':', 1)[0]}", (
            f"{text}, told at once: the commit's status is pending until the build ends.\n"
            + (BISECTION_NOTE if self.failing else "")))
        if not sha:
            return
        yield relay_store(step.master).set_pending_description(backend, sha, text)
        commit_ledger(step.master).post(backend, sha, "pending", text, (yield build_url(step)))

    def done(self) -> defer.Deferred:
        """Fires once everything told has been written: before the step ends, so that the final status is written
        after it."""
        return defer.DeferredList(self.telling)

"""Callbacks paced to PyTorch's relay's rate limit, none lost: the sender on the real reactor with the relay's real
store (Buildbot's database on a SQLite file), posting to the stand-in of PyTorch's relay over HTTP, the relay's
minute shortened to a second (the sender's WINDOW and the stand-in's window alike)."""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from pathlib import Path

import requests
from buildbot.test.fake import fakemaster
from twisted.internet import defer, reactor, task
from twisted.trial import unittest

from crcr.github.outbox_sender import MAX_POSTS_IN_FLIGHT
from crcr.pytorch_relay.sender import CALLBACK, Pace, PyTorchRelaySender
from crcr.store.service import RelayStore
from pytorchrelay import PyTorchRelayStandIn

WINDOW = 1.0  # seconds: the relay's minute, shortened
SPYRE, ACME = "torch-spyre/torch-spyre", "acme/acme-backend"
HEAD = "c" * 40


def callback(job: int, status: str, delivery: str) -> dict:
    """A job's callback as crcr writes one (callbacks.py), each job its own run and check run."""
    workflow = {"schema_version": "1", "name": "crcr", "job_name": f"spyre / suite-{job}", "run_id": str(job),
                "run_attempt": "1", "check_run_id": f"{job}-1", "status": status,
                "conclusion": "success" if status == "completed" else None}
    return {"event_type": "push", "delivery_id": delivery, "payload": {}, "workflow": workflow}


def quick_token_command(folder: Path, relay: PyTorchRelayStandIn, repos: list[str]) -> str:
    """A token command printing a token the stand-in signed for $CRCR_DOWNSTREAM_REPO, minted beforehand: the
    stand-in's own command starts Python for each post, which would pace the posts instead of the sender."""
    for repo in repos:
        token = folder / "tokens" / repo
        token.parent.mkdir(parents=True, exist_ok=True)
        token.write_text(relay.token(repo) + "\n")
    script = folder / "token.sh"
    script.write_text(f'#!/bin/sh\nexec cat "{folder}/tokens/$CRCR_DOWNSTREAM_REPO"\n')
    script.chmod(0o700)
    return str(script)


class PacedSenderTest(unittest.TestCase):
    timeout = 30  # Buildbot makes trial's 5 s: a burst of 100 at 20 a second takes 5 s, on a machine that may be loaded

    @defer.inlineCallbacks
    def start(self, relay_limit: int, rate: int, repos: list[str]):
        self.relay = PyTorchRelayStandIn(levels={repo: "L2" for repo in repos}, rate_limit=relay_limit,
                                         window=WINDOW).start()
        self.addCleanup(self.relay.stop)
        folder = Path(tempfile.mkdtemp(prefix="crcr-pacing-"))
        self.addCleanup(shutil.rmtree, folder, True)
        self.master = yield fakemaster.make_master(self, wantRealReactor=True, wantDb=True,
                                                   db_url="sqlite:///state.sqlite", basedir=str(folder))
        self.master.service_manager = self.master  # where the sender finds the store
        yield RelayStore().setServiceParent(self.master)
        self.sender = PyTorchRelaySender(callback_url=self.relay.url,
                                         token_command=quick_token_command(folder, self.relay, repos),
                                         retry_delay=10, max_delay=60, rate=rate)
        self.sender.WINDOW = WINDOW
        yield self.sender.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def enqueue(self, repo: str, job: int, status: str, delivery: str) -> defer.Deferred:
        return self.sender.enqueue(CALLBACK, repo, HEAD, delivery, callback(job, status, delivery), brid=job)

    @defer.inlineCallbacks
    def wait_until(self, condition, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.fail(f"{what}: not within {timeout}s; the relay answered "
                          f"{[(r.answered, r.detail) for r in self.relay.requests][-10:]}")
            yield task.deferLater(reactor, 0.02, lambda: None)

    @defer.inlineCallbacks
    def test_a_burst_of_100_callbacks_is_spread_within_the_relays_limit_and_every_one_taken(self):
        limit, jobs = 20, range(1, 51)  # 20 a second: fewer than the sender could post without its pace
        yield self.start(relay_limit=limit, rate=limit, repos=[SPYRE])
        for job in jobs:
            self.relay.dispatched(f"d-{job}", SPYRE)
        for job in jobs:  # as fast as the reporters write them
            yield self.enqueue(SPYRE, job, "in_progress", f"d-{job}")
            yield self.enqueue(SPYRE, job, "completed", f"d-{job}")

        yield self.wait_until(lambda: len(self.relay.callbacks()) == 100, 15, "all 100 callbacks forwarded")

        answers = [r.answered for r in self.relay.requests]
        self.assertEqual((answers.count(429), len(answers)), (0, 100), "none refused, none sent twice")
        forwarded = [(b["delivery_id"], b["workflow"]["status"]) for b in self.relay.callbacks()]
        for job in jobs:
            self.assertLess(forwarded.index((f"d-{job}", "in_progress")), forwarded.index((f"d-{job}", "completed")))
        spread = self.relay.requests[-1].at - self.relay.requests[0].at
        self.assertGreater(spread, (100 - MAX_POSTS_IN_FLIGHT) * WINDOW / limit - 0.1,
                           "after the first few, one every WINDOW / limit seconds")

    @defer.inlineCallbacks
    def test_a_429_holds_its_repository_for_a_jittered_wait_and_not_the_others(self):
        limit = 2
        yield self.start(relay_limit=limit, rate=limit, repos=[SPYRE, ACME])
        shortest = max(WINDOW / limit, WINDOW / 12)  # Pace.retry_wait's bounds: [shortest, 2 * shortest]
        self.relay.dispatched("d-spyre", SPYRE)
        self.relay.dispatched("d-acme", ACME)
        # The store keeps whole seconds: rows written now fall due at the next one, when the relay's window (a
        # second) must still hold the posts of the repository's own CI made after them.
        yield self.wait_until(lambda: reactor.seconds() % 1 < 0.3, 2, "the start of a second")
        yield self.enqueue(SPYRE, 1, "in_progress", "d-spyre")
        yield self.enqueue(ACME, 2, "in_progress", "d-acme")
        yield self.enqueue(ACME, 2, "completed", "d-acme")
        own_ci = {"Authorization": f"Bearer {self.relay.token(SPYRE)}"}
        for _ in range(limit):  # the repository's own CI uses up its window
            requests.post(self.relay.url, json=callback(99, "in_progress", "elsewhere"), headers=own_ci, timeout=5)
        yield self.wait_until(lambda: len(self.relay.callbacks()) == 3, 10, "the three callbacks forwarded")

        ours = [r for r in self.relay.requests if r.body["delivery_id"] != "elsewhere"]
        spyre = [r for r in ours if r.body["delivery_id"] == "d-spyre"]
        self.assertEqual([r.answered for r in spyre], [429] * (len(spyre) - 1) + [200])
        self.assertGreater(len(spyre), 1)
        waits = [later.at - earlier.at for earlier, later in zip(spyre, spyre[1:])]
        for wait in waits:
            self.assertTrue(shortest <= wait <= 2 * shortest + 0.5, f"retried after {wait:.3f}s")
        acme = [r for r in ours if r.body["delivery_id"] == "d-acme"]
        self.assertEqual([(r.body["workflow"]["status"], r.answered) for r in acme],
                         [("in_progress", 200), ("completed", 200)])
        self.assertLess(acme[-1].at, spyre[1].at, "the other repository's callbacks went on during the wait")


def test_the_wait_after_a_429_is_jittered_between_its_bounds():
    pace = Pace(rate=60, window=60, burst=4)
    waits = [pace.retry_wait() for _ in range(200)]
    assert 5 <= min(waits) and max(waits) <= 10, "a few seconds at the relay's minute"
    assert max(waits) - min(waits) > 2, "not all at once"
    assert 60 <= Pace(rate=1, window=60, burst=4).retry_wait() <= 120, "never sooner than the pace's own spacing"


def test_a_repository_posts_once_per_spacing_after_a_burst_and_never_over_its_rate_in_a_window():
    pace = Pace(rate=3, window=30, burst=2)  # a post every 10 s
    assert pace.next_post_at("a", now=0) == -math.inf
    pace.started("a", 0)
    assert (pace.next_post_at("a", 0), pace.next_post_at("b", 0)) == (0, -math.inf), "a burst of two, per repository"
    assert pace.next_post_at("a", 0, choosing=1) == 10, "then one every 10 s"
    pace.started("a", 0)
    pace.ended("a", 1)
    pace.ended("a", 2)
    assert pace.next_post_at("a", 10) == 10
    pace.started("a", 10)
    assert pace.next_post_at("a", 20) == 31, "three in the window: a window after the first one's end"
    pace.ended("a", 21)
    assert pace.next_post_at("a", 30.5) == 31
    assert pace.next_post_at("a", 31.5) == 20, "the first left the window: the steady pace"
    assert 40 <= pace.refused("a", 30) == pace.next_post_at("a", 31.5) <= 50, "held after a 429"


def test_a_repository_with_its_rate_in_flight_waits_for_one_to_end():
    pace = Pace(rate=2, window=60, burst=4)
    pace.started("a", 0)
    pace.started("a", 0)
    assert pace.next_post_at("a", 100) == math.inf

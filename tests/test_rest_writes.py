"""Buildbot's REST answers written by the reactor's thread (buildmaster/www/rest_writes.py): encoded in a thread
of the pool as Buildbot does, with the real reactor and its thread pool."""

from __future__ import annotations

import json
import threading

from buildbot.www.rest import V2RootResource
from twisted.internet import defer, threads
from twisted.trial import unittest
from twisted.web.test.requesthelper import DummyChannel, DummyRequest

from crcr.buildmaster.www.rest_writes import write_rest_answers_in_the_reactor

DATA = {"builds": [{"number": n, "state_string": "build successful " * 4} for n in range(2000)]}


class RecordingRequest(DummyRequest):
    """A request that notes the thread of every write to it."""

    def __init__(self, method: bytes = b"GET"):
        super().__init__([b"api", b"v2", b"builds"])
        self.method, self.channel, self.writers = method, DummyChannel(), set()

    def write(self, data):
        self.writers.add(threading.current_thread())
        super().write(data)


class RestWritesTest(unittest.TestCase):
    def setUp(self):
        self.patch(V2RootResource, "_write_json_data", V2RootResource.__dict__["_write_json_data"])  # put back after
        write_rest_answers_in_the_reactor()
        self.encoder = json.JSONEncoder(sort_keys=True, indent=2)

    def answer(self, request) -> defer.Deferred:
        """As Buildbot's renderRest asks it."""
        return threads.deferToThread(V2RootResource._write_json_data, request, self.encoder, DATA)

    @defer.inlineCallbacks
    def test_an_answer_encoded_in_a_pool_thread_is_written_whole_by_the_reactors_thread(self):
        request = RecordingRequest()

        yield self.answer(request)

        body = json.dumps(DATA, sort_keys=True, indent=2).encode()
        self.assertEqual(b"".join(request.written), body)
        self.assertEqual(request.writers, {threading.main_thread()})
        self.assertEqual(request.responseHeaders.getRawHeaders(b"content-length"), [str(len(body)).encode()])

    @defer.inlineCallbacks
    def test_a_head_request_gets_the_length_and_no_body(self):
        request = RecordingRequest(method=b"HEAD")

        yield self.answer(request)

        self.assertEqual(request.written, [])
        length = len(json.dumps(DATA, sort_keys=True, indent=2).encode())
        self.assertEqual(request.responseHeaders.getRawHeaders(b"content-length"), [str(length).encode()])

    @defer.inlineCallbacks
    def test_nothing_is_written_to_a_request_whose_client_went_away(self):
        request = RecordingRequest()
        request.channel = None  # as Twisted leaves a request whose connection was lost

        yield self.answer(request)

        self.assertEqual(request.written, [])
        self.assertIsNone(request.responseHeaders.getRawHeaders(b"content-length"))

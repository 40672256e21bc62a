"""Buildbot's REST answers written by the reactor's thread, not by the thread that encodes them.

Buildbot 4.3 encodes a REST answer's JSON in a thread of the reactor's pool, so that a long answer does not hold
the reactor (V2RootResource._write_json_data, run by renderRest through deferToThread), and writes each chunk to the
request from that thread. Twisted's transports are not thread-safe: a chunk written from the pool while the reactor
thread empties the transport's buffer can be dropped. The relay's tests saw it a few times a day under load: an
answer cut after its headers (http.client.IncompleteRead, 0 bytes read) while the master's http.log counted the
whole body as sent. Here the JSON is still encoded in the pool thread; the content length is set and the body
written once, by the reactor's thread.

There is no class to override for it: renderRest calls V2RootResource._write_json_data by its class's name, so
Buildbot's function is replaced by this one (write_rest_answers_in_the_reactor, once the plugin has its master).
"""

from __future__ import annotations

from buildbot.util import unicode2bytes
from buildbot.www.rest import V2RootResource, _is_request_finished
from twisted.python.threadable import isInIOThread


def _write_json_data(request, encoder, data) -> None:
    chunks = []
    for chunk in encoder.iterencode(data):
        if _is_request_finished(request):  # the client went away: no need to encode the rest
            return
        chunks.append(unicode2bytes(chunk))
    body = b"".join(chunks)
    if isInIOThread():  # a test's fake reactor runs "threads" in its own thread
        _write(request, body)
    else:
        from twisted.internet import reactor

        # Queued before deferToThread queues this function's end, which renderRest follows with request.finish():
        # the reactor runs calls from threads in order. Not waited for: a master stopping joins its pool's threads
        # from the reactor's thread, which a thread waiting for the reactor would hold for ever.
        reactor.callFromThread(_write, request, body)


def _write(request, body: bytes) -> None:
    if _is_request_finished(request):
        return
    request.setHeader(b"content-length", unicode2bytes(str(len(body))))
    if request.method != b"HEAD":
        request.write(body)


def write_rest_answers_in_the_reactor() -> None:
    V2RootResource._write_json_data = staticmethod(_write_json_data)

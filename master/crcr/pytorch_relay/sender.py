"""The service that delivers callbacks to PyTorch's relay from the outbox (kind `callback`, store/outbox.py), as the
GitHub outbox's sender delivers statuses: in order, retried through outages and restarts, nothing lost.

Its differences are PyTorch's relay's (callback/callback_handler.py at pytorch/test-infra 61a7757): each post carries
an OIDC token from the token command (tokens.py); and the relay answers a state it has already (an `in_progress`
or `completed` taken at an attempt whose answer was lost) with 400 "invalid state transition", which after an
earlier attempt means it took the callback. A callback it refuses otherwise (no dispatch record, a repository it
does not know) is given up and shown by `crcr status --outbox`; 401 (a token refused) and a token command that
gave none are tried again.
"""

from __future__ import annotations

from twisted.internet import defer

from crcr.github.outbox_sender import OutboxSender
from crcr.github.rest import Answer, GitHubAPI, http_client
from crcr.pytorch_relay.tokens import oidc_token
from crcr.store.outbox import OutboxRow

PYTORCH_RELAY_SENDER = "crcr-pytorch-relay-outbox"
CALLBACK = "callback"
ALREADY_TAKEN = b"invalid state transition"


def relay_sender(master) -> PyTorchRelaySender:
    return master.service_manager.namedServices[PYTORCH_RELAY_SENDER]


class PyTorchRelaySender(OutboxSender):
    name = PYTORCH_RELAY_SENDER
    receiver = "PyTorch's relay"

    def checkConfig(self, callback_url: str, token_command: str, retry_delay: int, max_delay: int, http=None):
        pass

    def reconfigService(self, callback_url: str, token_command: str, retry_delay: int, max_delay: int, http=None):
        self.retry_delay, self.max_delay = retry_delay, max_delay
        self.token_command = token_command
        self._api = GitHubAPI(http or http_client(self.master.reactor), callback_url)
        self.kinds = (CALLBACK,)

    def _taken(self, row: OutboxRow, answer: Answer) -> bool:
        return super()._taken(row, answer) or (answer.code == 400 and row.attempts > 0 and ALREADY_TAKEN in answer.body)

    def _what(self, row: OutboxRow) -> str:
        workflow = row.payload["workflow"]
        state = workflow.get("conclusion") or workflow["status"]
        return f"{row.payload['event_type']} callback '{state}' of {workflow['job_name']} on {row.sha[:10]}"

    @defer.inlineCallbacks
    def _attempt(self, row: OutboxRow):
        token = yield oidc_token(self.master.reactor, self.token_command, row.repo)
        answer = yield self._api.request("POST", "", {"Authorization": f"Bearer {token}"}, row.payload)
        return answer

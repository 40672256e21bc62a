"""What a view is told when a question about the relay's health cannot be answered as asked."""

from __future__ import annotations


class HealthQueryError(Exception):
    """`code` is the HTTP status a view answers with: 400 for a malformed question, 404 for an unknown subject."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

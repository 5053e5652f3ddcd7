"""Answers that say "later": 429 and 5xx with Retry-After are retried after the server's wait."""

from __future__ import annotations

import pytest
from kubectl_disagg.kube.rest import MAX_RETRIES, MAX_RETRY_AFTER_SECONDS, ErrorAnswer, retry_after, retrying


@pytest.mark.parametrize(("status", "headers", "wait"), [
    (429, {"Retry-After": "2"}, 2.0),
    (429, {"retry-after": "0"}, 0.0),
    (429, {}, 1.0),  # priority and fairness always sends it; a proxy may not
    (429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 1.0),
    (429, {"Retry-After": "3600"}, MAX_RETRY_AFTER_SECONDS),
    (503, {"Retry-After": "1"}, 1.0),
    (500, {}, None),  # a 5xx without Retry-After is an error, as in client-go
    (409, {"Retry-After": "1"}, None),
    (404, {}, None),
])
def test_retry_after(status, headers, wait):
    assert retry_after(status, headers, attempt=0) == wait


def test_attempts_are_capped():
    assert retry_after(429, {"Retry-After": "1"}, attempt=MAX_RETRIES) is None


def answer(status: int, retry: str | None) -> ErrorAnswer:
    return ErrorAnswer(status, "Too Many Requests" if status == 429 else "Error", b"",
                       {"Retry-After": retry} if retry is not None else {})


def test_retrying_waits_as_told_then_returns_the_answer():
    answers = [answer(429, "2"), answer(503, "1"), "ok"]
    slept = []

    def call():
        current = answers.pop(0)
        if isinstance(current, Exception):
            raise current
        return current

    assert retrying(call, sleep=slept.append) == "ok"
    assert slept == [2.0, 1.0]


def test_retrying_lets_other_answers_through_at_once():
    slept = []

    def call():
        raise answer(409, None)

    with pytest.raises(ErrorAnswer) as raised:
        retrying(call, sleep=slept.append)
    assert raised.value.status == 409 and slept == []


def test_retrying_gives_up_after_the_last_attempt():
    calls = []

    def call():
        calls.append(1)
        raise answer(429, "0")

    with pytest.raises(ErrorAnswer):
        retrying(call, sleep=lambda seconds: None)
    assert len(calls) == MAX_RETRIES + 1


def test_persisting_sends_again_while_unreachable_then_gives_up():
    from kubectl_disagg.errors import Conflict, Unreachable, persisting

    slept, calls = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise Unreachable("cannot reach the API server")
        return "done"

    assert persisting(flaky, sleep=slept.append) == "done" and slept == [0.5, 1.0]

    def down():
        raise Unreachable("cannot reach the API server")

    slept.clear()
    with pytest.raises(Unreachable):
        persisting(down, sleep=slept.append)
    assert slept == [0.5, 1.0, 2.0]

    def refused():
        raise Conflict("leaderworkerset/x changed since it was read")

    with pytest.raises(Conflict):
        persisting(refused, sleep=slept.append)

"""`retry`: when a request goes again, as client-go sends it again: an answer that says "later"
waited for (Retry-After, capped), a request without an answer sent again when that is safe, and
neither past the attempts or the time budget."""

from __future__ import annotations

import pytest

from kubectl_disagg.kube.client.retry import (MAX_RETRIES, MAX_RETRY_AFTER_SECONDS, RETRY_BUDGET_SECONDS, ErrorAnswer,
                                              backoff, retry_after, retrying)
from kubectl_disagg.kube.client.transport import NetworkError
from tests.fakes.clock import FakeClock


@pytest.mark.parametrize(("status", "headers", "read", "wait"), [
    (429, {"Retry-After": "2"}, False, 2.0),
    (429, {"retry-after": "0"}, False, 0.0),
    (429, {}, False, 1.0),  # priority and fairness always sends it; a proxy may not
    (429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, False, 1.0),
    (429, {"Retry-After": "3600"}, False, MAX_RETRY_AFTER_SECONDS),
    (503, {"Retry-After": "1"}, False, 1.0),
    (500, {}, False, None),  # a write's 5xx without Retry-After is an error, as in client-go
    (500, {}, True, backoff(0)),  # a read is safe to send again
    (503, {}, True, backoff(0)),
    (501, {}, True, None),  # not implemented: sending again changes nothing
    (409, {"Retry-After": "1"}, False, None),
    (404, {}, True, None),
])
def test_retry_after(status, headers, read, wait):
    assert retry_after(status, headers, attempt=0, read=read) == wait


def test_attempts_are_capped():
    assert retry_after(429, {"Retry-After": "1"}, attempt=MAX_RETRIES) is None


def test_backoff_starts_short_and_settles_at_client_gos_second():
    assert [backoff(n) for n in range(6)] == [0.125, 0.25, 0.5, 1.0, 1.0, 1.0]


def answer(status: int, retry: str | None) -> ErrorAnswer:
    return ErrorAnswer(status, "Too Many Requests" if status == 429 else "Error", b"",
                       {"Retry-After": retry} if retry is not None else {})


def scripted(*outcomes):
    """A call that raises or returns each outcome in turn; `calls` counts them."""
    outcomes = list(outcomes)

    def call():
        call.calls += 1
        current = outcomes.pop(0)
        if isinstance(current, Exception):
            raise current
        return current

    call.calls = 0
    return call


def test_retrying_waits_as_told_then_returns_the_answer():
    slept = []
    assert retrying(scripted(answer(429, "2"), answer(503, "1"), "ok"), sleep=slept.append) == "ok"
    assert slept == [2.0, 1.0]


def test_retrying_lets_other_answers_through_at_once():
    slept = []
    with pytest.raises(ErrorAnswer) as raised:
        retrying(scripted(answer(409, None)), sleep=slept.append, read=True, repeatable=True)
    assert raised.value.status == 409 and slept == [] and raised.value.attempts == 1


def test_retrying_gives_up_after_the_last_attempt():
    call = scripted(*[answer(429, "0")] * (MAX_RETRIES + 1))
    with pytest.raises(ErrorAnswer):
        retrying(call, sleep=lambda seconds: None)
    assert call.calls == MAX_RETRIES + 1


def reset(sent: bool = True, reused: bool = False) -> NetworkError:
    error = NetworkError("Connection reset by peer", sent=sent, reused=reused)
    error.__cause__ = ConnectionResetError(104, "Connection reset by peer")
    return error


def test_a_read_without_an_answer_goes_again_after_backoff():
    slept = []
    assert retrying(scripted(reset(), reset(), "ok"), read=True, repeatable=True, sleep=slept.append) == "ok"
    assert slept == [backoff(0), backoff(1)]


def test_a_stale_kept_alive_connection_goes_again_at_once():
    slept = []
    assert retrying(scripted(reset(sent=False, reused=True), "ok"), sleep=slept.append) == "ok"
    assert slept == [0.0]


def test_a_write_that_may_have_landed_goes_again_only_when_repeatable():
    with pytest.raises(NetworkError):
        retrying(scripted(reset(), "ok"), sleep=lambda s: None)
    assert retrying(scripted(reset(sent=False), "ok"), sleep=lambda s: None) == "ok"  # never left: always safe
    call = scripted(reset(), answer(409, None))
    with pytest.raises(ErrorAnswer) as raised:
        retrying(call, repeatable=True, sleep=lambda s: None)
    assert raised.value.resent and raised.value.attempts == 2  # its precondition refused the resend


def test_a_lasting_failure_is_not_sent_again():
    refused = NetworkError("Connection refused", sent=False)
    refused.__cause__ = ConnectionRefusedError(111, "Connection refused")
    call = scripted(refused, "ok")
    with pytest.raises(NetworkError):
        retrying(call, read=True, repeatable=True, sleep=lambda s: None)
    assert call.calls == 1


def test_the_budget_caps_attempts_and_time():
    call = scripted(*[reset()] * (MAX_RETRIES + 2))
    with pytest.raises(NetworkError) as raised:
        retrying(call, read=True, repeatable=True, sleep=lambda s: None)
    assert call.calls == MAX_RETRIES + 1 and raised.value.attempts == MAX_RETRIES + 1
    now = [0.0]

    def slow():  # each attempt times out after the client's read timeout
        now[0] += RETRY_BUDGET_SECONDS
        raise reset()

    with pytest.raises(NetworkError) as raised:
        retrying(slow, read=True, repeatable=True, sleep=lambda s: None, clock=FakeClock(read=lambda: now[0]))
    assert raised.value.attempts == 1  # a second wait that long is not started

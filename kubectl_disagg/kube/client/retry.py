"""A request sent again as client-go sends it again (rest/request.go, rest/with_retry.go).

One policy for every request of `rest.RestClient` (and the Prometheus client over it): an answer
that says "later" is waited for, a request that got no answer goes again when that is safe, and
nothing goes again past the budget. `ErrorAnswer` is a non-2xx answer as it came, before
`api_errors` makes it an error people read.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.kube.client.transport import Headers, NetworkError
from kubectl_disagg.wait import Deadline, DeadlineExceeded

# A request that got no answer goes again when sending it twice is safe, and so does one the
# server answers "later" (429, or a 5xx with Retry-After; a read also on a bare 500, 502, 503,
# 504), as client-go's rest client resends them (rest/request.go, rest/with_retry.go): at most
# MAX_RETRIES more times. client-go waits 1 s before each resend after a lost connection (an
# artificial Retry-After); here the first waits are shorter (a reset connection most often
# works again at once), then the same 1 s. No resend starts RETRY_BUDGET_SECONDS after the first
# attempt: a request that timed out (rest.REQUEST_TIMEOUT) is not waited out again.
MAX_RETRIES = 10
MAX_RETRY_AFTER_SECONDS = 30.0
RETRY_BUDGET_SECONDS = 120.0
_READ_RETRIED_STATUSES = (500, 502, 503, 504)


class ErrorAnswer(Exception):
    """A non-2xx answer, raw: status, HTTP reason, body (a metav1.Status, usually) and headers,
    and the request it answered (`GET /api/v1/...`)."""

    def __init__(self, status: int, reason: str | None, body: bytes, headers: Headers | Mapping[str, str],
                 request: str = ""):
        super().__init__(f"{status} {reason or ''}".strip())
        self.status, self.reason, self.body, self.headers, self.request = status, reason, body, headers, request
        self.attempts, self.resent = 1, False  # set by `retrying`


def backoff(attempt: int) -> float:
    """Seconds before resending a request that got no answer, after `attempt` (0: the first)."""
    return min(1.0, 0.125 * 2.0 ** attempt)


def retry_after(status: int | None, headers: Headers | Mapping[str, str] | None, attempt: int, *,
                read: bool = False) -> float | None:
    """Seconds to wait before retrying an answer, or None when it must not be retried.

    429 (priority and fairness, or a rate limit) is always "later": after Retry-After, else 1 s.
    A 5xx is retried when the server says when (Retry-After), as client-go does; a read (GET,
    safe to repeat) also after a bare 500, 502, 503 or 504, with `backoff`. The wait is capped,
    and so are the attempts.
    """
    if attempt >= MAX_RETRIES or status is None or not (status == 429 or 500 <= status < 600):
        return None
    raw = next((value for key, value in (headers or {}).items() if key.lower() == "retry-after"), None)
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        seconds = None  # an HTTP date: not what the API server sends; wait the default
    if seconds is None:
        if status == 429:
            seconds = 1.0
        elif read and status in _READ_RETRIED_STATUSES:
            seconds = backoff(attempt)
        else:
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def retrying(call: Callable[[], Any], *, read: bool = False, repeatable: bool = False,
             sleep: Callable[[float], None] = time.sleep, clock: Clock = SYSTEM_CLOCK,
             deadline: Deadline | None = None) -> Any:
    """`call()` (one request), again while it fails in a way worth another try, within the budget.

    An answer that says "later" (see `retry_after`) is waited for. A request that got no answer
    goes again when it never left whole (nothing reached the server), or when it is
    `repeatable`: a read, or a write whose repetition is harmless; never when the failure is
    `lasting` (connection refused, a name that does not resolve, a certificate that does not
    verify). Each error raised carries `attempts` and `resent` (a write went again after its
    answer was lost: it may be its own first sending, landed, that its precondition now
    refuses; see `RestClient.send`). A `deadline` cuts it short: a request it timed out, or a
    resend (or a wait for one) it leaves no time for, raises `DeadlineExceeded` (the error that
    stopped it its cause): the caller knows that no answer came in time, not what the answer is.
    """
    start, resent = clock.monotonic(), False
    for attempt in itertools.count():
        try:
            return call()
        except ErrorAnswer as err:
            err.attempts, err.resent = attempt + 1, resent
            wait = retry_after(err.status, err.headers, attempt, read=read)
            if wait is None or clock.monotonic() - start + wait > RETRY_BUDGET_SECONDS:
                raise
            _within(deadline, wait, err)
        except NetworkError as err:
            err.attempts, err.elapsed = attempt + 1, clock.monotonic() - start  # type: ignore[attr-defined]
            _within(deadline, 0.0, err)  # timed out by the deadline's own limit, perhaps
            if attempt >= MAX_RETRIES or err.lasting or (err.sent and not repeatable):
                raise
            wait = 0.0 if err.reused and not err.sent else backoff(attempt)  # a kept-alive connection closed
            if clock.monotonic() - start + wait > RETRY_BUDGET_SECONDS:
                raise
            _within(deadline, wait, err)
            resent = resent or err.sent
        sleep(wait)


def _within(deadline: Deadline | None, wait: float, error: Exception) -> None:
    """Raise DeadlineExceeded (from `error`) unless `deadline` leaves time to wait `wait`, then send again."""
    if deadline is not None and (deadline.expired() or wait >= deadline.remaining()):
        raise DeadlineExceeded("no answer before the deadline") from error

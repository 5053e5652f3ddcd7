"""kubectl's `-v`/`--v=N`: what each request to the API server did, on stderr.

The levels mean what they mean to kubectl (client-go's round trippers): 6, each request's method
and URL with its status and how long it took; 7, also the request's headers; 8, also the
request and response bodies, each cut at 10 KiB; 9, the bodies whole. Credentials never show:
the Authorization and Proxy-Authorization headers are masked as client-go masks them, and
token, password and key fields in a body are redacted. Set once per process, by the flag.
"""

from __future__ import annotations

import re
import sys
import threading

from kubectl_disagg.clock import Clock
from kubectl_disagg.errors import escaped

REQUESTS, HEADERS, BODIES, WHOLE_BODIES = 6, 7, 8, 9
BODY_LIMIT = 10 * 1024

_level = 0
_lock = threading.Lock()
_MASKED_HEADERS = ("authorization", "proxy-authorization", "cookie")
_SECRET_FIELDS = re.compile(r'("(?:token|access_token|id_token|refresh_token|password|client-key-data|'
                            r'clientKeyData|client-certificate-data|clientCertificateData)"\s*:\s*)"[^"]*"')


def set_level(level: int) -> None:
    global _level
    _level = max(0, level)


def round_trip(method: str, url: str, sent: list[tuple[str, str]], body: bytes | None, status: str,
               started: float, clock: Clock, answer: bytes | None = None) -> None:
    """Print one request as the level asks (nothing below 6). `status`: "200 OK", or what
    went wrong when no answer came; `started`: `clock.monotonic()` before it was sent."""
    if _level < REQUESTS:
        return
    milliseconds = round((clock.monotonic() - started) * 1000)
    lines = [f"{method} {url} {status} in {milliseconds} milliseconds"]
    if _level >= HEADERS:
        lines.extend(f"    {name}: {masked(name, value)}" for name, value in sent)
    if _level >= BODIES:
        if body:
            lines.append(f"Request Body: {shown_body(body)}")
        if answer:
            lines.append(f"Response Body: {shown_body(answer)}")
    stamp = clock.now().astimezone().strftime("%m%d %H:%M:%S")  # local time, as klog's
    with _lock:
        for line in lines:
            print(f"I{stamp} {escaped(line)}", file=sys.stderr, flush=True)  # a trace never rewrites the terminal


def masked(name: str, value: str) -> str:
    """A header's value as it may be shown: credentials as client-go shows them, `Bearer <masked>`."""
    if name.lower() not in _MASKED_HEADERS:
        return value
    scheme, _, _ = value.partition(" ")
    return f"{scheme} <masked>" if scheme and " " in value else "<masked>"


def shown_body(data: bytes) -> str:
    """A body as text, its secret fields redacted, cut at BODY_LIMIT below level 9."""
    text = _SECRET_FIELDS.sub(r'\1"<redacted>"', data.decode("utf-8", "replace").rstrip("\n"))  # before the cut: no half secret
    if _level < WHOLE_BODIES and len(text) > BODY_LIMIT:
        return f"{text[:BODY_LIMIT]} [truncated {len(text) - BODY_LIMIT} characters]"
    return text

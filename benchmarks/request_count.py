"""API requests counted by (verb, resource): a wrapper around a client's transport.

The benchmark wraps the REST transport every request of a `Session` goes through, so the
product carries no counting of its own:

    counter = RequestCounter.wrap(cluster.transport)
    ...
    counter.requests  # Counter({("list", "leaderworkersets"): 1, ...})
"""

from __future__ import annotations

import collections
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit


def request_key(method: str, url: str) -> tuple[str, str]:
    """(verb, resource) of a REST call, as the API server's audit log would name them.

    `GET .../namespaces/ns/leaderworkersets?watch=true` → ("watch", "leaderworkersets");
    subresources keep their suffix: ("patch", "leaderworkersets/status").
    """
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if segments[:1] == ["api"]:
        segments = segments[2:]  # /api/v1
    elif segments[:1] == ["apis"]:
        segments = segments[3:]  # /apis/group/version
    if len(segments) >= 3 and segments[0] == "namespaces":
        segments = segments[2:]  # a namespaced resource, not the namespace itself
    resource = "/".join([segments[0], *segments[2:3]]) if segments else ""
    named = len(segments) >= 2
    method = method.upper()
    query = {k.lower(): v for k, v in parse_qs(parts.query).items()}
    if method == "GET":
        watching = query.get("watch", [""])[0].lower() in ("true", "1")
        verb = "watch" if watching else "get" if named else "list"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if named else "deletecollection"}.get(method, method.lower())
    return verb, resource


class RequestCounter:
    """Counts every request that goes through one transport (anything with `request(method, url, …)`)."""

    def __init__(self) -> None:
        self.requests: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()

    @classmethod
    def wrap(cls, transport: Any) -> RequestCounter:
        counter = cls()
        send = transport.request

        def counted(method: str, url: str, *args: Any, **kwargs: Any):
            with counter._lock:
                counter.requests[request_key(method, url)] += 1
            return send(method, url, *args, **kwargs)

        transport.request = counted
        return counter

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

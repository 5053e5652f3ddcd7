"""`benchmarks.request_count`: requests counted by (verb, resource), as the benchmarks count them."""

from __future__ import annotations

import pytest

from benchmarks.request_count import request_key


@pytest.mark.parametrize(("method", "url", "expected"), [
    ("GET", "https://h/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets?labelSelector=a%3Db",
     ("list", "leaderworkersets")),
    ("GET", "https://h/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets?watch=true&timeoutSeconds=5",
     ("watch", "leaderworkersets")),
    ("GET", "https://h/api/v1/namespaces/ns/services", ("list", "services")),
    ("GET", "https://h/api/v1/namespaces/ns", ("get", "namespaces")),
    ("PATCH", "https://h/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/x/status",
     ("patch", "leaderworkersets/status")),
    ("POST", "https://h/apis/coordination.k8s.io/v1/namespaces/ns/leases?fieldManager=kubectl-disagg",
     ("create", "leases")),
    ("PUT", "https://h/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", ("update", "leases")),
    ("DELETE", "https://h/api/v1/namespaces/ns/services/s", ("delete", "services")),
])
def test_request_key(method, url, expected):
    assert request_key(method, url) == expected

"""The dashboard's hub (dashboard/hub.py): one LIST then a WATCH per kind and namespace, kept
current by the events; a lost watch (410 Gone) lists again; a failure puts the informer behind
(the page says since when and why) until a LIST succeeds again."""

from __future__ import annotations

import threading
import time

from kubectl_disagg.dashboard.hub import Hub
from kubectl_disagg.kube.client import LWS, Gone


def lws(name, version):
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version}}


class Client:
    """A LIST answers `listed`; each WATCH the next batch of `batches` (a callable raises)."""

    def __init__(self, batches):
        self.batches, self.lists, self.watches = list(batches), 0, []

    def list(self, resource, namespace, selector):
        self.lists += 1
        return {"metadata": {"resourceVersion": "10"}, "items": [lws("a", "10")]}

    def next_events(self, resource, namespace, selector, version, timeout):
        self.watches.append(version)
        if not self.batches:
            time.sleep(0.05)
            return []
        batch = self.batches.pop(0)
        if isinstance(batch, Exception):
            raise batch
        return batch


def settled(hub, check, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        hub.wait(hub.generation, 0.05)
    return False


def test_one_list_then_watch_events_keep_the_objects_current():
    client = Client([[{"type": "ADDED", "object": lws("b", "11")}],
                     [{"type": "MODIFIED", "object": lws("a", "12")}, {"type": "DELETED", "object": lws("b", "13")}]])
    hub = Hub(client, "ns", (LWS,), watch_seconds=0.1).start()
    try:
        assert settled(hub, lambda: client.watches[:3] == ["10", "11", "13"])
        assert [o["metadata"]["resourceVersion"] for o in hub.objects(LWS.kind)] == ["12"]
        assert client.lists == 1 and hub.behind() == []
    finally:
        hub.stop()


def test_a_lost_watch_lists_again_and_a_failure_is_behind_until_it_recovers():
    client = Client([Gone("expired"), ConnectionResetError("cut")])
    hub = Hub(client, "ns", (LWS,), watch_seconds=0.1)
    behind_seen = []
    original = hub._changed

    def changed():
        behind_seen.extend(hub.behind())
        original()

    for informer in hub.informers.values():
        informer.changed = changed
    hub.start()
    try:
        assert settled(hub, lambda: client.lists >= 3 and hub.behind() == [])
        assert any(b["why"] == "cut" and b["since"] for b in behind_seen)
    finally:
        hub.stop()


def test_hub_wait_returns_once_the_generation_moves():
    hub = Hub(Client([]), "ns", ())
    threading.Timer(0.05, hub._changed).start()
    assert hub.wait(0, 2.0) == 1


def test_a_set_the_look_cannot_read_is_said_on_the_page_not_fatal():
    from kubectl_disagg.clock import SYSTEM_CLOCK
    from kubectl_disagg.dashboard.looks import look_at
    from tests.support.sets import make_set

    class Broken:
        def snapshot(self, *args, **kwargs):
            raise KeyError("metadata")

    look = look_at(Broken(), make_set({"prefill": 1, "decode": 1}), "ns", SYSTEM_CLOCK)
    assert look.report is None and "metadata" in look.problem

"""`lease`: the Lease's arithmetic (MicroTime, expiry, when it is free), and queueing for a held
one (`--wait-for-lease`) over a fake REST client: watched between attempts, never past the deadline."""

from __future__ import annotations

import datetime

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.api_errors import AlreadyExists, NotFound
from kubectl_disagg.kube.lease import (Lease, LeaseHeld, LeaseWaitTimedOut, format_time, lease_expiry, lease_is_free,
                                       parse_time)
from kubectl_disagg.wait import Deadline

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def test_micro_time_always_has_six_fractional_digits():
    assert format_time(NOW) == "2026-05-01T12:00:00.000000Z"  # the API rejects a MicroTime without them
    assert parse_time(format_time(NOW)) == NOW
    assert parse_time("not a time") is None and parse_time(None) is None


@pytest.mark.parametrize(("spec", "free"), [
    ({}, True),  # released
    ({"holderIdentity": "a", "renewTime": format_time(NOW - datetime.timedelta(seconds=31)),
      "leaseDurationSeconds": 30}, True),  # lapsed
    ({"holderIdentity": "a", "renewTime": format_time(NOW - datetime.timedelta(seconds=29)),
      "leaseDurationSeconds": 30}, False),
    ({"holderIdentity": "a", "acquireTime": format_time(NOW), "leaseDurationSeconds": 30}, False),
    ({"holderIdentity": "a"}, False),  # no way to tell when it lapses: never take it
])
def test_lease_is_free(spec, free):
    assert lease_is_free(spec, NOW) is free


def test_lease_held_names_holder_and_expiry():
    expires = lease_expiry({"renewTime": format_time(NOW), "leaseDurationSeconds": 30})
    error = LeaseHeld("kubectl-disagg-llm", "serving", "alice@laptop/42/ab12cd", expires, now=NOW)
    assert error.lines()[0] == ("lease/kubectl-disagg-llm in serving is held by alice@laptop/42/ab12cd until "
                                "2026-05-01T12:00:30.000000Z (30s from now, unless renewed): another "
                                "`rollout step` is acting on this DisaggregatedSet")
    assert isinstance(error, UserError)


# --- queueing for a held lease --------------------------------------------------------------------


class LeaseApi:
    """One Lease object held by alice (renewed now, so not lapsing soon); a watch can release it."""

    def __init__(self, release_on_watch: bool):
        self.release_on_watch = release_on_watch
        self.watches: list[float] = []
        self.held = {"metadata": {"name": "kubectl-disagg-llm", "resourceVersion": "7", "uid": "u"},
                     "spec": {"holderIdentity": "alice", "renewTime": format_time(datetime.datetime.now(UTC)),
                              "leaseDurationSeconds": 30}}
        self.stored = self.held

    def create(self, resource, namespace, body):
        if self.stored is not None:
            raise AlreadyExists("lease/kubectl-disagg-llm already exists")
        self.stored = {**body, "metadata": {**body["metadata"], "resourceVersion": "8", "uid": "v"}}
        return self.stored

    def get(self, resource, namespace, name):
        if self.stored is None:
            raise NotFound("lease/kubectl-disagg-llm not found")
        return self.stored

    def watch(self, resource, namespace, selector, resource_version, timeout, field_selector=None):
        self.watches.append(timeout)
        if self.release_on_watch:
            self.stored = None
            return True
        return False


def test_a_queued_stepper_takes_the_lease_once_the_watch_sees_it_released():
    api = LeaseApi(release_on_watch=True)
    lease = Lease(api, "llm", "serving", "bob", 30)
    lease.acquire_waiting(Deadline.after(3600))
    assert lease.held and api.stored["spec"]["holderIdentity"] == "bob"
    assert len(api.watches) == 1 and 0 < api.watches[0] <= 31  # woken at the latest when alice's lapses


def test_a_queue_past_its_deadline_gives_up_naming_the_holder_without_watching():
    api = LeaseApi(release_on_watch=False)
    lease = Lease(api, "llm", "serving", "bob", 30)
    with pytest.raises(LeaseWaitTimedOut) as timed_out:
        lease.acquire_waiting(Deadline.after(-1))
    assert timed_out.value.lines()[0].startswith("timed out waiting for the lease: lease/kubectl-disagg-llm in "
                                                 "serving is held by alice")
    assert api.watches == [] and not lease.held

"""The per-set Lease (coordination.k8s.io/v1) that keeps two steppers from acting at once.

Lease arithmetic (expiry, MicroTime) is pure; `Lease` talks to the API only through the REST
client's public methods.
"""

from __future__ import annotations

import datetime
import getpass
import math
import os
import secrets
import socket
from types import TracebackType
from typing import Any, Mapping

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.kube.client import LEASE, AlreadyExists, NotFound, RestClient
from kubectl_disagg.wait import Deadline, until_settled
from kubectl_disagg.manifests.source import JsonObject

LEASE_PREFIX = "kubectl-disagg-"
DEFAULT_LEASE_SECONDS = 30


class LeaseHeld(UserError):
    """Another stepper holds the set's Lease: refuse, naming it and when it expires (how long
    from `now`, which a Lease with an expiry is given)."""

    def __init__(self, lease: str, namespace: str, holder: str, expires: datetime.datetime | None,
                 now: datetime.datetime | None = None):
        self.holder, self.expires = holder, expires
        if expires is None:
            until = "with no expiry recorded"
        elif now is None:
            until = f"until {format_time(expires)} (unless renewed)"
        else:
            remaining = max(0, math.ceil((expires - now).total_seconds()))
            until = f"until {format_time(expires)} ({remaining}s from now, unless renewed)"
        super().__init__([
            f"lease/{lease} in {namespace} is held by {holder} {until}: another `rollout step` is "
            "acting on this DisaggregatedSet",
            "wait for it to finish (or for the lease to expire if it was killed), then run the step again",
        ])


class LeaseWaitTimedOut(UserError):
    """`--wait-for-lease` ran out of time with another stepper still holding the Lease."""

    def __init__(self, held: LeaseHeld):
        super().__init__([f"timed out waiting for the lease: {held.lines()[0]}"])


class LeaseLost(UserError):
    """The Lease was taken over (or deleted) while we thought we held it: stop acting at once."""


def default_holder() -> str:
    """user@host/pid/random: who holds a lease, readable by people and unique per process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container user without a passwd entry
        user = "unknown"
    return f"{user}@{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"


def format_time(moment: datetime.datetime) -> str:
    """metav1.MicroTime: RFC 3339 with exactly six fractional digits, as the API demands."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def lease_expiry(spec: Mapping[str, Any]) -> datetime.datetime | None:
    """When a Lease lapses: last renewal (else acquisition) plus its duration."""
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int):
        return None
    return renewed + datetime.timedelta(seconds=duration)


def lease_is_free(spec: Mapping[str, Any], now: datetime.datetime) -> bool:
    """Released (no holder) or expired. A lease with a holder but no expiry is never free."""
    if not spec.get("holderIdentity"):
        return True
    expiry = lease_expiry(spec)
    return expiry is not None and expiry <= now


def running_stepper(client: RestClient, set_name: str, namespace: str, now: datetime.datetime) -> str | None:
    """Who holds the set's Lease now (the `rollout step` running on it), read only: None when
    it is free, lapsed, absent, or cannot be read (a verb's user may lack `get leases`). The
    verbs say it, so a person braking a running stepper knows which one stops."""
    try:
        current = client.get(LEASE, namespace, LEASE_PREFIX + set_name)
    except UserError:
        return None
    spec = current.get("spec") or {}
    return None if lease_is_free(spec, now) else str(spec.get("holderIdentity"))


class Lease:
    """A coordination.k8s.io/v1 Lease that lets one stepper at a time act on a set.

    Acquire creates it; an existing one is taken over only once it has expired, with its
    resourceVersion as precondition so two takers cannot both win. Release deletes it (with
    uid and resourceVersion preconditions: never someone else's). Expiry compares the holder's
    renewTime with our clock, as client-go's leader election does; clocks are assumed to agree
    within a fraction of the lease duration.
    """

    def __init__(self, client: RestClient, set_name: str, namespace: str, holder: str, duration: int,
                 wait_until: Deadline | None = None, clock: Clock = SYSTEM_CLOCK):
        if duration < 1:
            raise ValueError("a lease lasts at least one second")
        self.name = LEASE_PREFIX + set_name
        self.namespace = namespace
        self.holder = holder
        self.duration = duration
        self._set_name = set_name
        self._client = client
        self._object: JsonObject | None = None
        self._clock = clock
        self._renewed = 0.0  # clock.monotonic() of the latest successful write
        self._wait_until = wait_until  # when queueing for it gives up (NEVER: no limit); None: never queue

    def __enter__(self) -> Lease:
        if self._wait_until is None:
            self.acquire()
        else:
            self.acquire_waiting(self._wait_until)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.release()
        except UserError:
            if exc_type is None:
                raise
            # Already failing: that error matters more; an unreleased lease expires by itself.

    @property
    def held(self) -> bool:
        return self._object is not None

    def acquire(self) -> None:
        # Two rounds: the lease may vanish (released) between our create and our read.
        for _ in range(2):
            now = self._clock.now()
            try:
                self._store(self._client.create(LEASE, self.namespace, self._manifest(now)))
                return
            except AlreadyExists:
                pass
            try:
                current = self._client.get(LEASE, self.namespace, self.name)
            except NotFound:
                continue
            self._take_over(current, now)
            return
        raise LeaseHeld(self.name, self.namespace, "another stepper", None)

    def acquire_waiting(self, until: Deadline) -> None:
        """Acquire, queueing behind the holder until `until` (wait.NEVER: no limit):
        between attempts, watch the Lease until it changes (released, taken, renewed) or lapses,
        never polling (`wait.until_settled`)."""
        held = None
        for held in until_settled(self._attempt, lambda held: held is None, lambda held, seconds:  # noqa: B007 (read after the loop)
                                  self._wait_for_change(seconds), until):
            pass
        if held is not None:
            raise LeaseWaitTimedOut(held) from None

    def _attempt(self) -> LeaseHeld | None:
        """One acquire: None when it is ours, else who holds it."""
        try:
            self.acquire()
        except LeaseHeld as held:
            return held
        return None

    def _wait_for_change(self, timeout: float) -> bool:
        """Watch the Lease until it changes (True) or may have lapsed (False)."""
        try:
            current = self._client.get(LEASE, self.namespace, self.name)
        except NotFound:
            return True  # released meanwhile: try at once
        spec = current.get("spec") or {}
        now = self._clock.now()
        if lease_is_free(spec, now):
            return True
        expiry = lease_expiry(spec)
        if expiry is not None:  # wake when it lapses, should the holder have died
            timeout = min(timeout, max(1.0, (expiry - now).total_seconds() + 0.5))
        return self._client.watch(LEASE, self.namespace, "", current["metadata"]["resourceVersion"], timeout,
                                  field_selector=f"metadata.name={self.name}")

    def renew(self) -> None:
        """Extend the lease; LeaseLost if it is no longer ours."""
        if self._object is None:
            raise LeaseLost(f"lease/{self.name} in {self.namespace} is not held")
        renewed = _replace_spec(self._object, renewTime=format_time(self._clock.now()),
                                leaseDurationSeconds=self.duration)
        try:
            self._store(self._client.replace(LEASE, self.namespace, renewed))
        except (Conflict, NotFound):
            self._object = None
            raise LeaseLost(f"lease/{self.name} in {self.namespace} was taken over or deleted while this "
                            "stepper held it; stopped so that two steppers never act at once") from None

    def renew_if_due(self) -> None:
        """Renew once a third of the duration has passed, as client-go does: cheap to call often."""
        if self._clock.monotonic() - self._renewed >= self.duration / 3:
            self.renew()

    def release(self) -> None:
        if self._object is None:
            return
        metadata = self._object["metadata"]
        try:
            self._client.delete(LEASE, self.namespace, self.name, metadata["uid"], metadata["resourceVersion"])
        except (Conflict, NotFound):
            pass  # someone took it over after it lapsed: it is theirs now, not ours to delete
        finally:
            self._object = None

    def _take_over(self, current: JsonObject, now: datetime.datetime) -> None:
        spec = current.get("spec") or {}
        if not lease_is_free(spec, now):
            raise LeaseHeld(self.name, self.namespace, spec.get("holderIdentity", "?"), lease_expiry(spec), now)
        taken = _replace_spec(current, holderIdentity=self.holder, leaseDurationSeconds=self.duration,
                              acquireTime=format_time(now), renewTime=format_time(now),
                              leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        try:
            self._store(self._client.replace(LEASE, self.namespace, taken))
        except (Conflict, NotFound):
            # Another stepper took the lapsed lease a moment before us.
            latest = self._client.get(LEASE, self.namespace, self.name).get("spec") or {}
            raise LeaseHeld(self.name, self.namespace, latest.get("holderIdentity", "?"),
                            lease_expiry(latest), now) from None

    def _store(self, lease: JsonObject) -> None:
        self._object = lease
        self._renewed = self._clock.monotonic()

    def _manifest(self, now: datetime.datetime) -> JsonObject:
        return {
            "apiVersion": f"{LEASE.group}/{LEASE.version}",
            "kind": LEASE.kind,
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {naming.NAME_LABEL: self._set_name, naming.MANAGED_BY_LABEL: naming.MANAGER},
            },
            "spec": {
                "holderIdentity": self.holder,
                "leaseDurationSeconds": self.duration,
                "acquireTime": format_time(now),
                "renewTime": format_time(now),
                "leaseTransitions": 0,
            },
        }


def _replace_spec(lease: Mapping[str, Any], **changes: Any) -> JsonObject:
    """A copy of `lease` with spec fields changed; metadata (resourceVersion included) kept."""
    return {**lease, "spec": {**(lease.get("spec") or {}), **changes}}

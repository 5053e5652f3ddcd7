"""Plays the LeaderWorkerSet controller's status side (test and demo code only).

The local control plane has no LWS controller and no kubelet, so nothing would
ever report an LWS ready. :class:`LWSSimulator` writes what the controller
would: ``status.replicas``, ``readyReplicas``, ``updatedReplicas`` and
``observedGeneration``, following ``spec.replicas`` (absent counts 1), through
the ``/status`` subresource like a real controller.

Three ways to drive it:

* ``sim.sync(namespace)``: one deterministic pass, for tests;
* ``sim.advance(namespace)``: one write per LWS along the real controller's way
  (after a scale, first the status it reports on the way, then the target);
* ``with sim.running(namespace, delay=2): ...``: a background reconcile loop
  that lets each LWS catch up ``delay`` seconds after its spec changed (half
  way there, the status on the way), for demos.

Failure modes are configured per LWS by name, labels or predicate; the most
recently configured matching rule wins::

    sim.never_ready(name="decode")                 # readyReplicas stays 0
    sim.partially_ready(1, labels={"role": "p"})   # ready capped at 1
    sim.stale(predicate=lambda lws: ...)           # status left untouched
    sim.healthy(name="decode")                     # back to normal
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

__all__ = [
    "Healthy",
    "LWSSimulator",
    "NeverReady",
    "PartiallyReady",
    "Stale",
    "desired_status",
    "lws_conditions",
    "status_on_the_way",
]

GROUP, VERSION, PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"

log = logging.getLogger(__name__)

LWS = dict[str, Any]
Predicate = Callable[[LWS], bool]


# --------------------------------------------------------------------------
# Behaviours: what status an LWS converges to.


@dataclass(frozen=True)
class Healthy:
    """Every replica (leader + workers group) becomes updated and ready."""

    def ready(self, desired: int) -> int | None:
        return desired


@dataclass(frozen=True)
class NeverReady:
    """Groups exist and are updated but none becomes ready (e.g. crash loop)."""

    def ready(self, desired: int) -> int | None:
        return 0


@dataclass(frozen=True)
class PartiallyReady:
    """At most ``ready_replicas`` groups become ready (e.g. scarce capacity)."""

    ready_replicas: int

    def ready(self, desired: int) -> int | None:
        return min(self.ready_replicas, desired)


@dataclass(frozen=True)
class Stale:
    """The controller has stopped: status is never written again, so
    ``observedGeneration`` falls behind ``metadata.generation`` as soon as the
    spec changes. (An LWS that never had a status keeps none.)"""

    def ready(self, desired: int) -> int | None:
        return None


Behaviour = Healthy | NeverReady | PartiallyReady | Stale


def desired_replicas(lws: LWS) -> int:
    replicas = lws.get("spec", {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def desired_status(
    lws: LWS, behaviour: Behaviour = Healthy(), *, observed_generation: bool = True
) -> dict[str, int] | None:
    """The status fields the simulated controller reports for ``lws``, or
    None when it reports nothing."""
    desired = desired_replicas(lws)
    ready = behaviour.ready(desired)
    if ready is None:
        return None
    status: dict[str, Any] = _counts(desired, ready, desired)
    if observed_generation:
        status["observedGeneration"] = lws["metadata"]["generation"]
    status["conditions"] = lws_conditions(lws, available=ready == desired)
    return status


def _counts(replicas: int, ready: int, updated: int) -> dict[str, Any]:
    """The LWS status counts as the LWS API writes them: zero is left out (omitempty), which a
    merge patch says with null."""
    counts = {"replicas": replicas, "readyReplicas": ready, "updatedReplicas": updated}
    return {key: value or None for key, value in counts.items()}


def status_on_the_way(lws: LWS, target: Mapping[str, Any]) -> dict[str, Any] | None:
    """The status the real LWS controller reports between a scale and ``target``, or None
    when it goes there in one write. It observes the new generation first: scaled up, the
    groups it is still creating are updated but not yet counted or ready (updatedReplicas above
    readyReplicas, replicas below spec); scaled down, those it is still removing stay counted
    and ready (replicas and readyReplicas above spec)."""
    status = lws.get("status") or {}
    generation = lws["metadata"]["generation"]
    replicas = status.get("replicas") or 0
    wanted = target.get("replicas") or 0
    if "observedGeneration" not in target or status.get("observedGeneration") == generation or replicas == wanted:
        return None
    ready = status.get("readyReplicas") or 0
    updated = wanted if wanted > replicas else min(status.get("updatedReplicas") or 0, replicas)
    return {**_counts(replicas, ready, updated), "observedGeneration": generation,
            "conditions": lws_conditions(lws, available=False)}


# The LWS controller's two exclusive conditions (makeCondition in its leaderworkerset_controller.go).
_LWS_CONDITIONS = {
    True: ("Available", "AllGroupsReady", "All replicas are ready"),
    False: ("Progressing", "GroupsProgressing", "Replicas are progressing"),
}


def lws_conditions(lws: LWS, *, available: bool) -> list[dict[str, Any]]:
    """The conditions the LWS controller leaves on ``lws`` (as read) when it is ``available`` or
    not, as its setCondition keeps them: the true one is added the first time it holds, the other
    of the pair flips to False, and a condition once added is never removed, so an LWS that was
    ever available keeps an ``Available`` condition. A new condition's lastTransitionTime is the
    LWS's creationTimestamp (the simulator has no clock of its own to stamp)."""
    kind, reason, message = _LWS_CONDITIONS[available]
    meta = lws["metadata"]
    generation = meta.get("generation", 1)
    previous = [dict(c) for c in (lws.get("status") or {}).get("conditions") or []]
    found = False
    for condition in previous:
        if condition["type"] == kind:
            found = True
            if condition["status"] != "True" or condition.get("observedGeneration") != generation:
                condition.update(status="True", observedGeneration=generation, reason=reason, message=message)
        elif condition["type"] in ("Available", "Progressing") and condition["status"] == "True":
            condition.update(status="False", observedGeneration=generation)
    if not found:
        previous.append({"type": kind, "status": "True", "observedGeneration": generation,
                         "lastTransitionTime": meta.get("creationTimestamp") or "1970-01-01T00:00:00Z",
                         "reason": reason, "message": message})
    return previous


# --------------------------------------------------------------------------
# Rules: which LWS gets which behaviour.


@dataclass(frozen=True)
class _Rule:
    behaviour: Behaviour
    name: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    predicate: Predicate | None = None

    def matches(self, lws: LWS) -> bool:
        meta = lws["metadata"]
        if self.name is not None and meta["name"] != self.name:
            return False
        if not self.labels.items() <= (meta.get("labels") or {}).items():
            return False
        return self.predicate is None or self.predicate(lws)


def _key(lws: LWS) -> tuple[str, str, str]:
    meta = lws["metadata"]
    return meta["namespace"], meta["name"], meta["uid"]


# --------------------------------------------------------------------------
# The simulator


class LWSSimulator:
    """Writes LWS status as the LWS controller would, on request or in the
    background.

    ``api_client`` is a ``kubernetes.client.ApiClient`` allowed to list LWS
    and patch ``leaderworkersets/status`` (e.g. ``ControlPlane.api_client()``).
    With ``observed_generation=False`` it behaves like LWS controllers older
    than April 2026, which never set ``status.observedGeneration``.
    """

    def __init__(self, api_client: client.ApiClient, *, observed_generation: bool = True):
        self._api = client.CustomObjectsApi(api_client)
        self.observed_generation = observed_generation
        # Replaced, never mutated, so the background thread can read it
        # without holding the lock.
        self._rules: tuple[_Rule, ...] = ()
        self._rules_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.errors: list[Exception] = []  # what the background loop hit

    # -- failure configuration -------------------------------------------

    def healthy(self, name: str | None = None, *, labels: Mapping[str, str] | None = None,
                predicate: Predicate | None = None) -> None:
        """Matching LWS become fully ready again (overrides earlier rules)."""
        self._add(Healthy(), name, labels, predicate)

    def never_ready(self, name: str | None = None, *, labels: Mapping[str, str] | None = None,
                    predicate: Predicate | None = None) -> None:
        """Matching LWS keep ``readyReplicas`` at 0."""
        self._add(NeverReady(), name, labels, predicate)

    def partially_ready(self, ready_replicas: int, name: str | None = None, *,
                        labels: Mapping[str, str] | None = None,
                        predicate: Predicate | None = None) -> None:
        """Matching LWS get at most ``ready_replicas`` ready."""
        if ready_replicas < 0:
            raise ValueError("ready_replicas must be >= 0")
        self._add(PartiallyReady(ready_replicas), name, labels, predicate)

    def stale(self, name: str | None = None, *, labels: Mapping[str, str] | None = None,
              predicate: Predicate | None = None) -> None:
        """Matching LWS get no more status writes."""
        self._add(Stale(), name, labels, predicate)

    def clear(self) -> None:
        """Forget every rule: all LWS are healthy."""
        with self._rules_lock:
            self._rules = ()

    def behaviour_for(self, lws: LWS) -> Behaviour:
        """The behaviour of the latest rule matching ``lws`` (default Healthy)."""
        for rule in reversed(self._rules):
            if rule.matches(lws):
                return rule.behaviour
        return Healthy()

    def _add(self, behaviour: Behaviour, name: str | None,
             labels: Mapping[str, str] | None, predicate: Predicate | None) -> None:
        rule = _Rule(behaviour, name, dict(labels or {}), predicate)
        with self._rules_lock:
            self._rules = (*self._rules, rule)

    # -- synchronous mode --------------------------------------------------

    def sync(self, namespace: str | None = None, label_selector: str | None = None) -> list[str]:
        """Bring the status of every matching LWS up to date in one pass
        (all namespaces when ``namespace`` is None). Returns the names of the
        LWS whose status was written, sorted."""
        written = [lws["metadata"]["name"] for lws in self._list(namespace, label_selector) if self.settle(lws)]
        return sorted(written)

    def advance(self, namespace: str | None = None, label_selector: str | None = None) -> list[str]:
        """One write per matching LWS along the real controller's way: the status it reports on
        the way (see `status_on_the_way`) when there is one, else the target. Two passes after a
        scale end where one :meth:`sync` does. Returns the names written, sorted."""
        written = []
        for lws in self._list(namespace, label_selector):
            target = self._target(lws)
            if target is not None and self._write(lws, status_on_the_way(lws, target) or target):
                written.append(lws["metadata"]["name"])
        return sorted(written)

    def pending(self, lws: LWS) -> bool:
        """Whether ``lws`` (an object as read) reports a status other than its behaviour's."""
        target = self._target(lws)
        return target is not None and _current(lws, target) != target

    def settle(self, lws: LWS) -> bool:
        """Write the status ``lws`` (as read) converges to, at once: what :meth:`sync` does for
        each LWS, for a caller that picks which LWS and when (a benchmark timing each write).
        False if there was nothing to write or it is gone."""
        target = self._target(lws)
        return target is not None and self._write(lws, target)

    # -- background mode ---------------------------------------------------

    @contextlib.contextmanager
    def running(self, namespace: str | None = None, label_selector: str | None = None, *,
                delay: float = 1.0, interval: float = 0.2) -> Iterator[LWSSimulator]:
        """Run :meth:`start` for the duration of a ``with`` block."""
        self.start(namespace, label_selector, delay=delay, interval=interval)
        try:
            yield self
        finally:
            self.stop()

    def start(self, namespace: str | None = None, label_selector: str | None = None, *,
              delay: float = 1.0, interval: float = 0.2) -> None:
        """Reconcile in a daemon thread every ``interval`` seconds. An LWS
        whose target status changed is written once the change is ``delay``
        seconds old, so scale-ups visibly take time in a demo."""
        if self._thread is not None:
            raise RuntimeError("simulator already running")
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(namespace, label_selector, delay, interval),
            name="lws-simulator", daemon=True,
        )
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None:
            return
        self._stopping.set()
        self._thread.join(timeout)
        self._thread = None

    def _loop(self, namespace: str | None, label_selector: str | None,
              delay: float, interval: float) -> None:
        # (namespace, name, uid) -> (target status, when that target was first seen)
        pending: dict[tuple[str, str, str], tuple[dict[str, int], float]] = {}
        while not self._stopping.is_set():
            try:
                pending = self._reconcile_delayed(namespace, label_selector, delay, pending)
            except Exception as e:  # keep simulating through API hiccups
                log.warning("lws simulator: %s", e)
                self.errors.append(e)
            self._stopping.wait(interval)

    def _reconcile_delayed(self, namespace: str | None, label_selector: str | None, delay: float,
                           pending: dict[tuple[str, str, str], tuple[dict[str, int], float]]):
        """One pass of the background loop; returns what is still waiting."""
        now = time.monotonic()
        still_pending = {}
        for lws in self._list(namespace, label_selector):
            target = self._target(lws)
            if target is None or _current(lws, target) == target:
                continue
            key = _key(lws)
            previous, since = pending.get(key, (None, now))
            if previous != target:
                since = now  # the spec moved again: the delay restarts
            on_the_way = status_on_the_way(lws, target)
            if now - since >= delay:
                self._write(lws, target)
            elif now - since >= delay / 2 and on_the_way is not None:
                self._write(lws, on_the_way)  # half way: as the real controller reports a scale
                still_pending[key] = (target, since)
            else:
                still_pending[key] = (target, since)
        return still_pending

    # -- API -----------------------------------------------------------------

    def _target(self, lws: LWS) -> dict[str, int] | None:
        return desired_status(lws, self.behaviour_for(lws), observed_generation=self.observed_generation)

    def _list(self, namespace: str | None, label_selector: str | None) -> list[LWS]:
        kwargs = {"label_selector": label_selector} if label_selector else {}
        if namespace is None:
            result = self._api.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs)
        else:
            result = self._api.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, **kwargs)
        return result["items"]

    def _write(self, lws: LWS, target: dict[str, int]) -> bool:
        """Merge-patch the status subresource; False if nothing changed or
        the LWS is gone."""
        if _current(lws, target) == target:
            return False
        meta = lws["metadata"]
        try:
            self._api.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], {"status": target},
                _content_type="application/merge-patch+json",
            )
        except ApiException as e:
            if e.status == 404:  # deleted since we listed it
                return False
            raise
        return True


def _current(lws: LWS, target: Mapping[str, int]) -> dict[str, Any]:
    status = lws.get("status") or {}
    return {k: status.get(k) for k in target}

"""A dashboard run, put together: the hub started, the model made again on each of its changes
(and each second, for the clocks the page shows), and the server bound."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.dashboard.hub import Hub
from kubectl_disagg.dashboard.looks import Looks
from kubectl_disagg.dashboard.server import Act, Dashboard, Model
from kubectl_disagg.views.dashboard import page_document

REFRESH_SECONDS = 1.0  # at most this long between two makes of the document, changes or not
SETTLE_SECONDS = 0.02  # a burst of watch events (a controller settling many objects) makes one document


def model_of(hub: Hub, looks: Looks, *, actions: bool, mode: str, scope: str, clock: Clock = SYSTEM_CLOCK) -> Model:
    def make() -> dict[str, object]:
        return page_document(looks(), clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"), behind=hub.behind(),
                             actions=actions, mode=mode, scope=scope)
    return Model(make)


def keep_current(hub: Hub, model: Model, stop: threading.Event, wait: Callable[[float], object]) -> None:
    """Make the document again whenever the hub moves (in a thread of its own until `stop`)."""
    def run() -> None:
        generation = hub.generation
        while not stop.is_set():
            moved = hub.wait(generation, REFRESH_SECONDS)
            if moved != generation:
                wait(SETTLE_SECONDS)
            generation = hub.generation
            try:
                model.refresh()
            except Exception:  # noqa: BLE001 (a look that fails now is looked at again on the next change)
                continue
    threading.Thread(target=run, daemon=True, name="dashboard model").start()


def start(hub: Hub, looks: Looks, act: Act | None, address: str, port: int, *, mode: str, scope: str,
          clock: Clock = SYSTEM_CLOCK) -> tuple[Dashboard, threading.Event]:
    """The hub started and synced (its first LISTs), the model current, the server bound: serve
    with `dashboard.server.serve_forever()`; set the event to stop the model's thread."""
    hub.start()
    deadline = clock.monotonic() + 30
    while not hub.synced() and clock.monotonic() < deadline and not hub.behind_failed():
        hub.wait(hub.generation, 0.2)
    model = model_of(hub, looks, actions=act is not None, mode=mode, scope=scope, clock=clock)
    dashboard = Dashboard(model, act, clock=clock)
    dashboard.bind(address, port)
    stop = threading.Event()
    keep_current(hub, model, stop, stop.wait)
    return dashboard, stop

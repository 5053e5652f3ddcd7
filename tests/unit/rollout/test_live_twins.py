"""Twin runs on live objects (issue 47, "Done when"): one random sequence of events (the set's
template changed or reverted, its slices and decode's replicas changed, `rollout step`, the
verbs, time passing past a soak, readiness) driven twice through the commands, in-process:

- the terminal: `rollout step -f FILE` and `rollout VERB -f FILE` on an in-memory cluster (the
  RolloutState in it, through the cluster's store);
- git: `rollout step --gitops --commit` and `rollout VERB --gitops --commit` on a real temporary
  repository, each commit synced as Argo CD syncs it (the render of the committed state applied,
  the rest pruned) to a second in-memory cluster;

both clusters given the same readiness (tests/support/stores.py `LiveTwins`). After every event
the two modes show the same live LeaderWorkerSets (slice, role, revision, replicas) and
Services, the same `rollout status` (available, complete, each slice's revisions, the
RolloutPolicy's rollout: phase, wave, gate, held, paused, aborted, revisions), the same
recorded position, and commands that end alike. `KUBECTL_DISAGG_TWIN_EXAMPLES` raises the
example count."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_disagg.exits import StepExit
from tests.support.stores import STEP_ENDS, LiveTwins, running

EXAMPLES = int(os.environ.get("KUBECTL_DISAGG_TWIN_EXAMPLES", "25")) // 5 or 1  # each example runs ~40 commands

VERBS = ("pause", "resume", "abort", "retry", "promote", "promote --full")
EVENTS = ("step", "step", "step", "ready", "ready", "partly", "tick", "img:1", "img:2", "img:3", "slices", "decode",
          *VERBS)

def shown(status: dict) -> dict:
    """`rollout status` with each slice's revisions (those with replicas, see `running`). Their
    counts are the live LWS's, compared above: `rollout status --gitops` gives the committed
    step's (its --help), which a replicas change renders past before a step records it (design §10.1)."""
    return {**status, "slices": {s: sorted(rev for rev, counts in revisions.items() if any(counts.values()))
                                 for s, revisions in status["slices"].items()}}


def compare(twins: LiveTwins, event: str, live: bool = True, stepped: bool = True, status: bool = True) -> None:
    """The two modes alike after `event`; with `live=False` (the set's file or the position just
    changed, see `play`) the recorded positions only. Unless `stepped` (readiness or time since
    the last step), `complete` is left out: through git it says the next step writes nothing,
    and the step that records a replicas change once ready is yet to come (design §10.1)."""
    position, terminal_position = twins.git_position(), twins.terminal_position()
    assert position == terminal_position, (event, position, terminal_position)
    if not live:
        return
    terminal, in_git = twins.live(twins.terminal.memory), twins.live(twins.argo.cluster)
    assert running(in_git) == running(terminal), (event, running(in_git), running(terminal))
    if not status:
        return
    (terminal_code, terminal_status), (_, git_status) = twins.status_terminal(), twins.status_git()
    assert terminal_code == (0 if terminal_status["available"] else 3), event  # exit 0 Available, 3 not
    if not stepped:
        git_status, terminal_status = ({**status, "complete": None} for status in (git_status, terminal_status))
    assert shown(git_status) == shown(terminal_status), (event, shown(git_status), shown(terminal_status))


@st.composite
def histories(draw):
    slices = draw(st.integers(2, 4))
    events = []
    for event in draw(st.lists(st.sampled_from(EVENTS), min_size=4, max_size=14)):
        events.append((event, draw(st.integers(2, 5)) if event == "slices" else draw(st.integers(1, 3))
                       if event == "decode" else None))
        if event == "slices":
            # `rollout status --gitops` gives the committed step per slice (its --help): a slice
            # gained is rendered at once and recorded by the step once it is ready (design §8.1)
            events += [("ready", None), ("step", None)]
    return slices, events


def play(twins: LiveTwins, events, compared: bool = True) -> None:
    gained = False  # a slice gained that no step recorded yet through git (see below)
    for event, value in events:
        own = False
        if event not in ("step", "ready", "partly", "tick"):
            # The set's file changed (a commit through git), or a verb wrote the position; then
            # `rollout step`. Either reaches the terminal's cluster at that step, git's at the
            # commit's sync (design §9.6: a commit's render starts the admitted slices and holds the
            # others at the stable revision; design §10.1: a replicas change renders before any step
            # records it), by design. So a step follows each at once (no readiness or verb
            # between them), and before it the positions alone are compared.
            if event in VERBS:
                terminal, in_git = twins.verb(event)
                assert in_git == terminal, (event, in_git, terminal)
            else:
                twins.edit(**({"image": event} if event.startswith("img:") else {event: value}))
            if compared:
                compare(twins, f"{event} {value or ''}", live=False)
            # (a slice gained: `rollout status --gitops` reads it once a step recorded it, the
            # next one, once it is ready: see `histories`; until then its status is left out)
            gained, own = gained or event == "slices", True
            event, value = "step", f"after {event} {value or ''}"
        if event == "step":
            terminal, in_git = twins.step_terminal(), twins.step_git()
            gained = gained and own
            assert STEP_ENDS[in_git] == terminal, (value, in_git, terminal)
        elif event == "ready":
            twins.ready()
        elif event == "partly":
            twins.ready(lambda name, replicas: replicas - 1 if replicas > 1 else replicas)
        elif event == "tick":
            twins.clock.seconds += 16 * 60  # past the soak of 15 minutes
        if compared:
            compare(twins, f"{event} {value or ''}", stepped=event == "step", status=not gained)


def deployed(root, monkeypatch, slices: int) -> LiveTwins:
    """The twins at img:2, rolled from img:1 with `promote --full`: each mode's position is a
    rollout's (a first deploy's: test_a_first_deploy_records_its_position_in_both_modes)."""
    twins = LiveTwins(root, monkeypatch, slices=slices)
    play(twins, [("step", None), ("ready", None), ("step", None), ("img:2", None), ("promote --full", None),
                 *[("ready", None), ("step", None)] * 3], compared=False)
    compare(twins, "img:2 rolled out")
    assert twins.status_terminal()[1]["complete"]
    return twins


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(histories())
def test_twin_runs_on_live_objects_show_the_same_fleet_status_and_exits(tmp_path_factory, history):
    slices, events = history
    with pytest.MonkeyPatch.context() as monkeypatch:
        play(deployed(tmp_path_factory.mktemp("twins"), monkeypatch, slices), events)


def test_a_template_commit_keeps_the_replicas_running(tmp_path, monkeypatch):
    twins = deployed(tmp_path, monkeypatch, 2)
    play(twins, [("decode", 3)])  # rendered at 3 through git (design §10.1); its step waits for readiness to record it
    assert twins.step_git() == StepExit.WAITING
    twins.edit(image="img:3")
    assert running(twins.live(twins.argo.cluster))["lws"]["llm-0-0c1737b3-decode"][3] == 3  # the sync keeps it
    play(twins, [("step", None)])


def test_an_abort_with_nothing_to_roll_back_reads_alike(tmp_path, monkeypatch):
    """Paused at rest, a replicas change, then an abort both modes accept with no slice at the
    stable revision: the healthy fleet serving the set's own revision reads Available in both
    (design §7, issue 47 item 13)."""
    twins = deployed(tmp_path, monkeypatch, 3)
    play(twins, [("pause", None), ("decode", 2), ("ready", None), ("step", None), ("abort", None)])
    assert twins.status_git()[1]["available"] is twins.status_terminal()[1]["available"] is True


def test_a_slice_gained_while_held_is_in_both_statuses(tmp_path, monkeypatch):
    """Slices raised while the rollout is held run at the stable revision in both fleets, and
    `rollout status --gitops` shows them there, as its render derives them (gitops/waves.py
    `with_gained`), before any step records them."""
    twins = deployed(tmp_path, monkeypatch, 2)
    play(twins, [("img:3", None), ("ready", None), ("step", None), ("pause", None), ("slices", 3), ("ready", None),
                 ("step", None)])
    assert twins.status_git()[1] == twins.status_terminal()[1]


def test_a_first_deploy_records_its_position_in_both_modes(tmp_path, monkeypatch):
    twins = LiveTwins(tmp_path, monkeypatch, slices=2)
    play(twins, [("step", None), ("ready", None), ("step", None)], compared=False)
    assert running(twins.live(twins.argo.cluster)) == running(twins.live(twins.terminal.memory))
    assert twins.git_position() == twins.terminal_position()
    assert twins.status_git()[1]["rollout"] == twins.status_terminal()[1]["rollout"]

"""`kubectl disagg handover` against the real kube-apiserver: every object checked after each way."""

from __future__ import annotations

import pytest
import yaml

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit
from tests.support.controller import SERVICE_PATH, controller_owner
from tests.support.controller import store
from tests.support.stepping import SET, Stepper, write_set
from tests.support.stepping import cli


@pytest.fixture
def stepper(control_plane, namespace, capsys, lws_simulator, api_client) -> Stepper:
    return Stepper(control_plane, namespace, capsys, lws_simulator, api_client)


def every_object(stepper: Stepper) -> dict[str, dict]:
    selector = f"{naming.NAME_LABEL}={SET}"
    return {f"{o['kind'] if 'kind' in o else 'Service'}/{o['metadata']['name']}": o
            for o in [*stepper.live.lws(selector), *stepper.live.services(selector)]}


def deployed(stepper: Stepper, tmp_path) -> dict:
    """A set run by kubectl-disagg, mid-rollout (two revisions), and its stored object."""
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}))
    new = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2")
    stored = store(stepper.control_plane, stepper.namespace, yaml.safe_load(new.read_text()))
    stepper(new)
    stepper.simulator.sync(stepper.namespace)
    stepper(new)
    stepper.simulator.sync(stepper.namespace)
    return stored


def test_plugin_to_controller_changes_ownership_only(stepper, tmp_path):
    stored = deployed(stepper, tmp_path)
    before = every_object(stepper)
    assert len(before) == 8
    args = (SET, "-n", stepper.namespace)

    code, out, err = cli(stepper, "handover", "to-controller", *args, "--dry-run")
    assert code == 0, err
    assert out.count("would leaderworkerset/") == 4 and out.count("would service/") == 4
    assert every_object(stepper) == before  # a dry run changes nothing

    code, out, err = cli(stepper, "handover", "to-controller", *args)
    assert code == 0, err
    handed = every_object(stepper)
    assert set(handed) == set(before)
    for key, obj in handed.items():
        # What the controller requires to adopt it: the stored set as controller, by uid.
        assert obj["metadata"]["ownerReferences"] == [controller_owner(stored)], key
        assert obj["metadata"]["labels"] == before[key]["metadata"]["labels"], key
        assert obj["spec"] == before[key]["spec"], key  # nothing restarts
        assert obj["metadata"].get("generation") == before[key]["metadata"].get("generation"), key
    assert cli(stepper, "rollout", "step", *args)[0] == StepExit.REFUSED
    code, out, _ = cli(stepper, "handover", "to-controller", *args)
    assert code == 0 and out.count("already handed over") == 8

    # Back to the plugin needs the garbage collector: tests/integration/test_upstream_handover.py.


def test_an_object_that_would_not_be_adopted_refuses_the_whole_handover(stepper, tmp_path):
    deployed(stepper, tmp_path)
    (service,) = [o for o in stepper.live.services() if o["metadata"]["name"].endswith("-decode-prv")][:1]
    stepper.control_plane.request("PATCH", SERVICE_PATH.format(stepper.namespace, service["metadata"]["name"]),
                                  {"metadata": {"labels": {naming.MANAGED_BY_LABEL: "someone-else"}}},
                                  content_type="application/merge-patch+json")
    before = every_object(stepper)
    code, out, err = cli(stepper, "handover", "to-controller", SET, "-n", stepper.namespace)
    assert code == StepExit.REFUSED and out == ""
    assert f"service/{service['metadata']['name']} carries the set's name label but neither" in err
    assert every_object(stepper) == before

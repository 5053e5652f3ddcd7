"""The revision changes with templates and role names, and with nothing else (spec §2)."""

from __future__ import annotations

import copy

import pytest

from kubectl_disagg.loader import parse_stream
from kubectl_disagg.load import load_documents
from kubectl_disagg.output import to_yaml
from tests.conftest import EXAMPLES


def revision_of(data: dict) -> str:
    (ds,) = load_documents(parse_stream(to_yaml(data), "ds.yaml")).sets
    return ds.revision


@pytest.fixture
def data() -> dict:
    return parse_stream((EXAMPLES / "encode-prefill-decode.yaml").read_text(), "x")[0].data


def edited(data: dict, edit) -> dict:
    data = copy.deepcopy(data)
    edit(data)
    return data


def role(data: dict, i: int) -> dict:
    return data["spec"]["roles"][i]


UNCHANGED = {
    "replicas": lambda d: role(d, 1)["spec"].update(replicas=7),
    "slices": lambda d: d["spec"].update(slices=5),
    "rollout strategy": lambda d: role(d, 1)["spec"].update(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "50%"}}),
    "placement": lambda d: d["spec"].update(placementPolicy={"type": "ExclusiveSlice", "topology": "zone"}),
    "role metadata": lambda d: role(d, 0).update(metadata={"labels": {"x": "y"}, "annotations": {"a": "b"}}),
    "set metadata": lambda d: d["metadata"].update(namespace="elsewhere", labels={"team": "z"}),
    "startup policy": lambda d: role(d, 0)["spec"].update(startupPolicy="LeaderCreated"),
    "explicit size default": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"].update(size=1),
    "explicit restart default": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"].update(restartPolicy="RecreateGroupOnPodRestart"),
    "explicit protocol default": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["ports"][0].update(protocol="TCP"),
    "explicit null": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"].update(leaderTemplate=None),
}

CHANGED = {
    "image": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0].update(image="x:2"),
    "size": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"].update(size=3),
    "pod label": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"].update(v="2"),
    "leader template": lambda d: role(d, 1)["spec"]["leaderWorkerTemplate"].pop("leaderTemplate"),
    "restart policy": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"].update(restartPolicy="None"),
    "role rename": lambda d: role(d, 0).update(name="vision"),
    "role order": lambda d: d["spec"]["roles"].reverse(),
    "role added": lambda d: d["spec"]["roles"].append(copy.deepcopy(role(d, 2)) | {"name": "extra"}),
}


@pytest.mark.parametrize("edit", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_revision_unchanged(data, edit):
    assert revision_of(edited(data, edit)) == revision_of(data)


@pytest.mark.parametrize("edit", CHANGED.values(), ids=CHANGED.keys())
def test_revision_changed(data, edit):
    assert revision_of(edited(data, edit)) != revision_of(data)


def test_revision_is_eight_hex_digits(data):
    revision = revision_of(data)
    assert len(revision) == 8 and int(revision, 16) >= 0

"""`render`'s output against the real API server: accepted, findable by label, RBAC-guarded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from kubectl_disagg.core import naming
from tests.conftest import EXAMPLES, without_namespace

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def render(example, namespace: str) -> str:
    """The example rendered into `namespace` (its own namespace removed: -n may not contradict it)."""
    result = subprocess.run([sys.executable, "-m", "kubectl_disagg", "render", "-f", "-", "-n", namespace],
                            input=without_namespace(example), capture_output=True, text=True, check=True)
    return result.stdout


def names(manifests: str) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(manifests)}


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_server_side_dry_run_accepts_the_rendered_objects(control_plane, namespace, example):
    out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                input=render(example, namespace)).stdout
    assert out.count("serverside-applied (server dry run)") == len(names(render(example, namespace)))
    listed = json.loads(control_plane.kubectl("get", "leaderworkersets", "-n", namespace, "-o", "json").stdout)
    assert listed["items"] == []


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_server_side_apply_then_list_by_label_finds_exactly_the_rendered_objects(control_plane, namespace, example):
    manifests = render(example, namespace)
    control_plane.kubectl("apply", "--server-side", "--field-manager=kubectl-disagg", "-f", "-", input=manifests)
    set_name = yaml.safe_load(example.read_text())["metadata"]["name"]
    selector = naming.set_selector(set_name)
    listed = json.loads(control_plane.kubectl("get", "leaderworkersets,services", "-n", namespace,
                                              "-l", selector, "-o", "json").stdout)
    found = {(item["kind"], item["metadata"]["name"]) for item in listed["items"]}
    assert found == names(manifests)
    # The server kept what we rendered: a second apply changes nothing.
    again = control_plane.kubectl("apply", "--server-side", "--field-manager=kubectl-disagg", "-f", "-",
                                  input=manifests).stdout
    assert "configured" not in again and again.count("serverside-applied") == len(found)


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_the_examples_themselves_are_valid_disaggregatedsets(control_plane, namespace, example):
    # The examples name their own namespace; the server checks the object, not where it goes.
    document = yaml.safe_load(example.read_text())
    document["metadata"]["namespace"] = namespace
    out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                input=yaml.safe_dump(document)).stdout
    assert "serverside-applied (server dry run)" in out


def test_viewer_cannot_apply_rendered_objects(control_plane):
    manifests = render(EXAMPLES / "prefill-decode.yaml", "default")
    refused = control_plane.kubectl("apply", "--server-side", "-f", "-", input=manifests, user="viewer", check=False)
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr.lower()
    # The viewer may read what is there (nothing), but not write.
    listed = control_plane.kubectl("get", "leaderworkersets", "-n", "default", user="viewer", check=False)
    assert listed.returncode == 0

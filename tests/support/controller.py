"""The upstream controller's stand-ins and stored revisions, shared by the integration tests of working beside it."""

from __future__ import annotations

import copy
import urllib.error

import yaml


SERVICE_PATH = "/api/v1/namespaces/{}/services/{}"


def controller_owner(stored: dict) -> dict:
    return {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
            "name": stored["metadata"]["name"], "uid": stored["metadata"]["uid"], "controller": True}


SETS = "/apis/disaggregatedset.x-k8s.io/v1/namespaces/{}/disaggregatedsets"


def store(control_plane, namespace: str, document: dict) -> dict:
    """POST the document; the answer is the object as stored (defaulted, pruned)."""
    document = copy.deepcopy(document)
    document["metadata"].pop("namespace", None)
    try:
        return control_plane.request("POST", SETS.format(namespace), document)
    except urllib.error.HTTPError as error:
        raise AssertionError(f"the API server refused the document: {error.read().decode()}") from None


def with_external_decode(path):
    document = yaml.safe_load(path.read_text())
    for role in document["spec"]["roles"]:
        if role["name"] == "decode":
            role["scaling"] = {"mode": "External"}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path

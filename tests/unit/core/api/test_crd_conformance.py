"""Rendered LWS against the upstream LWS CRD schema; examples against the DisaggregatedSet CRD."""

from __future__ import annotations

import copy

import pytest

from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.manifests.reader import parse_stream
from tests.oracles.crd_schema import schema_errors
from tests.support.paths import DS_CRD, EXAMPLES, LWS_CRD, require_crds
from tests.support.paths import load_sets

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


@pytest.fixture(autouse=True)
def crds():
    return require_crds()


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_rendered_lws_match_the_lws_crd(example):
    lws = [o for ds in load_sets([str(example)]).sets for o in render_set(ds) if o["kind"] == "LeaderWorkerSet"]
    assert lws
    for obj in lws:
        assert schema_errors(LWS_CRD, obj) == [], obj["metadata"]["name"]


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_examples_match_the_disaggregatedset_crd(example):
    for document in parse_stream(example.read_text(), example.name):
        assert schema_errors(DS_CRD, document.data) == []


def test_the_schema_check_can_fail():
    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets
    lws = copy.deepcopy(next(render_set(ds)))
    lws["spec"]["replcas"] = 1
    lws["spec"]["leaderWorkerTemplate"]["size"] = "two"
    errors = schema_errors(LWS_CRD, lws)
    assert any("replcas" in e for e in errors) and any("size" in e for e in errors)

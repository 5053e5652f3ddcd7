"""`snapshot`: live objects as the pure core reads them."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import Identity, lws_from_object, service_from_object


def labelled(slice_index: str, revision: str = "abcd1234", role: str = "prefill") -> dict:
    return {naming.NAME_LABEL: "llm", naming.SLICE_LABEL: slice_index, naming.REVISION_LABEL: revision,
            naming.ROLE_LABEL: role}


@pytest.mark.parametrize("read", [lws_from_object, service_from_object])
def test_identity_follows_the_labels_through_replace_copy_and_pickle(read):
    live = read({"metadata": {"name": "llm-0-prefill", "labels": labelled("0")}})
    assert live.identity == Identity(0, "abcd1234", "prefill") and live.identity.complete
    moved = replace(live, labels=labelled("3", role="decode"))
    assert moved.identity == Identity(3, "abcd1234", "decode") and moved.name == live.name
    assert live.identity.slice == 0  # the original is untouched
    for again in (copy.copy(moved), copy.deepcopy(moved), pickle.loads(pickle.dumps(moved))):
        assert again == moved and type(again) is type(moved)
    with pytest.raises(ValueError):
        replace(live, identity=Identity(9, "x", "y"))  # derived, never set


def test_a_malformed_slice_label_leaves_the_identity_incomplete():
    live = lws_from_object({"metadata": {"name": "x", "labels": labelled("²")}})
    assert live.identity.slice is None and not live.identity.complete

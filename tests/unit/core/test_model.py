"""`model`: the namespace a set is read into."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.model import namespace_for
from kubectl_disagg.errors import UserError


def test_namespace_flag_may_not_contradict_the_document(tmp_path):
    from tests.support.paths import load_sets
    from tests.support.paths import EXAMPLES

    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets  # namespace: serving
    assert namespace_for(ds, None, "default") == "serving"
    assert namespace_for(ds, "serving", "default") == "serving"
    with pytest.raises(UserError) as caught:
        namespace_for(ds, "other", "default")
    assert 'does not match --namespace "other"' in caught.value.lines()[0]

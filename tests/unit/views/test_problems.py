"""views/problems.py: the CLI's words for the problems core leaves as data."""

from dataclasses import replace

import pytest

from kubectl_disagg.core.api.model import namespace_for
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.views.problems import lines
from tests.support.paths import EXAMPLES, load_sets


def test_a_namespace_asked_for_is_worded_as_the_flag_with_what_to_pass_instead():
    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets  # namespace: serving
    with pytest.raises(UserError) as caught:
        namespace_for(ds, "other", "default")
    (line,) = lines(caught.value)
    assert line.endswith(': metadata.namespace: disaggregatedset/llama is in namespace "serving", which does not '
                         'match --namespace "other"; pass --namespace=serving or leave it out')
    assert line.startswith(f"{ds.source.file}:7: ")


def test_a_namespace_that_is_no_name_is_worded_as_the_flag():
    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets
    bare = replace(ds, namespace=None)
    with pytest.raises(UserError) as caught:
        namespace_for(bare, "Not_A_Name", "default")
    (line,) = lines(caught.value)
    assert line.startswith('--namespace "Not_A_Name": ')
    assert str(caught.value.problems[0]).startswith('the namespace asked for, "Not_A_Name": ')


def test_other_problems_read_as_they_are_escaped():
    assert lines(UserError([Problem("f.yaml", 3, "spec.x", "bad\x1b[31m"), "plain"])) == [
        "f.yaml:3: spec.x: bad\\x1b[31m", "plain"]

"""`model`: the namespace a set is read into."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.api.model import NamespaceProblem, namespace_for
from kubectl_disagg.errors import UserError


def test_namespace_flag_may_not_contradict_the_document(tmp_path):
    from tests.support.paths import load_sets
    from tests.support.paths import EXAMPLES

    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets  # namespace: serving
    assert namespace_for(ds, None, "default") == "serving"
    assert namespace_for(ds, "serving", "default") == "serving"
    with pytest.raises(UserError) as caught:
        namespace_for(ds, "other", "default")
    (problem,) = caught.value.problems  # core says it as data, naming no flag (views/problems.py words it)
    assert isinstance(problem, NamespaceProblem) and (problem.document, problem.asked) == ("serving", "other")
    assert caught.value.lines()[0].endswith('does not match the namespace asked for, "other"')


def test_issue47_item16_the_revision_services_annotation_is_true_or_false_else_refused_at_its_line():
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream

    def load(value: str):
        text = ("apiVersion: disaggregatedset.x-k8s.io/v1\nkind: DisaggregatedSet\nmetadata:\n  name: llm\n"
                f"  annotations:\n    kubectl-disagg/revision-services: {value}\nspec:\n  roles:\n  - name: p\n"
                "    spec:\n      replicas: 1\n      leaderWorkerTemplate:\n        workerTemplate:\n"
                "          spec:\n            containers: [{name: c, image: i}]\n")
        text += text[text.index("  - name: p"):].replace("name: p", "name: d")
        return load_sets(parse_stream(text, "ds.yaml"))

    assert [ds.revision_services for value in ('"false"', '"true"') for ds in load(value)] == [False, True]
    with pytest.raises(UserError) as refused:
        load('"no"')
    assert str(refused.value) == ('ds.yaml:6: metadata.annotations.kubectl-disagg/revision-services: Unsupported '
                                  'value: "no": supported values: "true", "false"')

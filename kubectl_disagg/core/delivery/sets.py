"""Loading: manifests in, validated DisaggregatedSets out (all problems at once).

`load_documents` takes documents already parsed (a directory's, read by `inputs` and loaded by
`inputs.directory`, which holds what they hold; a set stored in the cluster; a benchmark's). Sets
come back in input order, with the other documents alongside for pass-through; `load_sets` is
the sets alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.source import Document, JsonObject, dotted
from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet, build_set, is_disaggregated_set, is_policy_document
from kubectl_disagg.core.controller.render import MAX_OBJECT_BYTES, oversized_objects
from kubectl_disagg.core.api.validation import validate_document

if TYPE_CHECKING:  # read only where a policy is (see load_documents)
    from kubectl_disagg.core.api.policy_types import RolloutPolicy


Loaded = tuple[tuple[DisaggregatedSet | Document, ...], tuple[Problem, ...]]


def load_sets(documents: Iterable[Document], namespace: str | None = None,
              fallback: str = DEFAULT_NAMESPACE) -> list[DisaggregatedSet]:
    """The sets of `documents` (`load_documents`), the other documents and warnings left out."""
    items, _ = load_documents(documents, namespace, fallback)
    return [item for item in items if isinstance(item, DisaggregatedSet)]


def load_documents(documents: Iterable[Document], namespace: str | None = None,
                   fallback: str = DEFAULT_NAMESPACE) -> Loaded:
    """Sets (each with its RolloutPolicy, read beside it and never passed through) and the
    other documents, in input order, and the warnings; every problem at once (what they make
    together is `inputs.directory.Directory`'s to hold). `namespace` (-n) and `fallback`
    (the context's) place a set and its policy that name none, to match them."""
    items: list[DisaggregatedSet | Document] = []
    problems: list[Problem | str] = []  # a Problem each, and whatever a UserError of build_set holds
    warnings: list[Problem] = []
    documents = list(documents)
    for document in documents:
        if is_policy_document(document.data):
            continue
        if not is_disaggregated_set(document.data):
            problems.extend(_check_passthrough(document))
            items.append(document)
            continue
        errors, notes = validate_document(document)
        problems.extend(errors)
        warnings.extend(notes)
        if not errors:
            try:
                ds = build_set(document)
            except UserError as error:  # a template value Go could not decode, found by hashing
                problems.extend(error.problems)
                continue
            too_large = _too_large(document, ds)
            problems.extend(too_large)
            if not too_large:
                items.append(ds)
    problems.extend(_defined_twice([item for item in items if isinstance(item, DisaggregatedSet)]))
    policies: dict[tuple[str | None, str], RolloutPolicy] = {}
    if any(is_policy_document(document.data) for document in documents):
        # The RolloutPolicy's reader (and its analysis checks, a PromQL parser) is loaded where a
        # policy is read: `render | kubectl apply` of a plain set does not pay for it (BENCHMARKS.md).
        from kubectl_disagg.core.delivery.policy import policies_for
        policies, policy_problems = policies_for(documents, [i for i in items if isinstance(i, DisaggregatedSet)],
                                                 namespace, fallback)
        problems.extend(policy_problems)
    if problems:
        raise UserError(problems)
    items = [replace(i, policy=policies.get((i.namespace, i.name))) if isinstance(i, DisaggregatedSet) else i
             for i in items]
    return tuple(items), tuple(warnings)


def set_from_object(stored: JsonObject) -> DisaggregatedSet:
    """A stored DisaggregatedSet object (as the API returns it) as a validated set."""
    metadata = stored.get("metadata") or {}
    where = f"disaggregatedset/{metadata.get('name')} in {metadata.get('namespace')}"
    return load_sets([Document(stored, where, 0, {})])[0]


def _defined_twice(sets: list[DisaggregatedSet]) -> list[Problem]:
    """Two documents for one set (name and namespace): both would render the same objects, and
    kubectl would apply whichever comes last. Reported at the second."""
    first: dict[tuple[str | None, str], DisaggregatedSet] = {}
    problems = []
    for ds in sets:
        key = (ds.namespace, ds.name)
        if key in first:
            other = first[key].source
            where = f' in namespace "{ds.namespace}"' if ds.namespace else ""
            problems.append(Problem(ds.source.file, ds.source.line(("metadata", "name")), "metadata.name",
                                    f"disaggregatedset/{ds.name}{where} is defined twice (first at "
                                    f"{other.file}:{other.line(('metadata', 'name'))})"))
        else:
            first[key] = ds
    return problems


def _too_large(document: Document, ds: DisaggregatedSet) -> list[Problem]:
    """Objects the cluster could not store (render.MAX_OBJECT_BYTES says why), found before
    anything is rendered or written."""
    return [Problem(document.file, document.line(path), dotted(path),
                    f"Too long: {what} would be {size:,} bytes as JSON; the cluster stores at most "
                    f"{MAX_OBJECT_BYTES:,} (etcd's request limit, less what the API server adds)")
            for path, what, size in oversized_objects(ds, document.data)]


def _check_passthrough(document: Document) -> list[Problem]:
    """Other documents pass through render, but only if they are Kubernetes objects at all."""
    data = document.data
    if not isinstance(data, dict):
        return [Problem(document.file, document.line(()), "", "document is not a Kubernetes object (a mapping)")]
    problems = []
    for key in ("apiVersion", "kind"):
        if not isinstance(data.get(key), str) or not data.get(key):
            problems.append(Problem(document.file, document.line((key,)), key, "Required value: a Kubernetes object needs it"))
    return problems

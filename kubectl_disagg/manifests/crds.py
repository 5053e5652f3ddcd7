"""The CRDs this project writes (config/crd in the repository), as data: DisaggregatedSet,
DisaggregatedSetRoleScaler, and the RolloutState of a git-driven rollout (docs/gitops.md).

They ship inside the package (`kubectl_disagg.crd_yaml`), so `kubectl disagg crds` can install
the API wherever the DisaggregatedSet object itself is stored and no controller runs.
"""

from __future__ import annotations

from importlib import resources

import yaml

from kubectl_disagg.manifests.source import JsonObject

PACKAGE = "kubectl_disagg.crd_yaml"


def crd_documents() -> list[JsonObject]:
    """Every CRD shipped with the package, in file-name order."""
    files = sorted((f for f in resources.files(PACKAGE).iterdir() if f.name.endswith(".yaml")),
                   key=lambda f: f.name)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for f in files for doc in yaml.load_all(f.read_text(encoding="utf-8"), Loader=loader) if doc]

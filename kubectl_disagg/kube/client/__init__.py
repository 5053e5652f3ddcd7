"""The API client: one box with a small face (standard library only, no Kubernetes client package).

Inside: `kubeconfig.py` (where and who, merged as kubectl merges it), `credentials.py`,
`exec_plugin.py`, `oidc.py` (fresh credentials), `transport.py` (our HTTP/1.1 over TLS, the
proxies, gzip), `rest.py` (requests), `retry.py` (sent again as client-go sends them again),
`api_errors.py` (answers as errors), `verbosity.py` (kubectl's `-v`), `server_dry_run.py`
(`validate --server`'s dry run) and `prometheus.py` (Prometheus's query API over the same
transport). Outside this package nothing imports those modules: the rest of kubectl-disagg uses
the names below (tests/unit/test_architecture.py holds it).
"""

from kubectl_disagg.kube.client.api_errors import AlreadyExists, ApiError, Gone, NotFound, PatchRejected
from kubectl_disagg.kube.client.kubeconfig import Impersonation, context_names, context_namespace
from kubectl_disagg.kube.client.prometheus import PrometheusClient
from kubectl_disagg.kube.client.rest import (BY_KIND, DISAGGREGATED_SET, EVENT, JSON_PATCH, LEASE, LWS, ROLE_SCALER,
                                             ROLLOUT_STATE, SERVICE, Resource, RestClient, connect, with_kind)
from kubectl_disagg.kube.client.server_dry_run import dry_run_apply
from kubectl_disagg.kube.client.verbosity import set_level as set_verbosity

__all__ = [
    # the client, and how a command gets one from --kubeconfig and --context
    "RestClient", "connect", "context_names", "context_namespace", "Impersonation",
    # where the kinds live in the API, and the patch type of a pinned change
    "Resource", "BY_KIND", "DISAGGREGATED_SET", "EVENT", "LEASE", "LWS", "ROLE_SCALER", "ROLLOUT_STATE", "SERVICE",
    "JSON_PATCH", "with_kind",
    # the API server's answers as errors
    "ApiError", "AlreadyExists", "Gone", "NotFound", "PatchRejected",
    # validate --server's dry run, Prometheus's queries, kubectl's -v
    "dry_run_apply", "PrometheusClient", "set_verbosity",
]

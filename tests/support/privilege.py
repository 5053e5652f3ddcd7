"""Service accounts with exactly the RBAC a verb needs, shared by the integration tests."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml


REPO = Path(__file__).resolve().parents[2]


RBAC = REPO / "deploy" / "rbac.yaml"


STATUS, STEPPER, GITOPS = "kubectl-disagg-status", "kubectl-disagg-stepper", "kubectl-disagg-gitops"


RBAC_API = "/apis/rbac.authorization.k8s.io/v1"


def rbac_documents(namespace: str) -> list[dict]:
    """deploy/rbac.yaml, moved into `namespace`."""
    documents = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    for document in documents:
        document["metadata"]["namespace"] = namespace
        for subject in document.get("subjects") or []:
            subject["namespace"] = namespace
    return documents


def create(control_plane, namespace: str, document: dict) -> None:
    path = {"Role": f"{RBAC_API}/namespaces/{namespace}/roles",
            "RoleBinding": f"{RBAC_API}/namespaces/{namespace}/rolebindings",
            "ServiceAccount": f"/api/v1/namespaces/{namespace}/serviceaccounts"}[document["kind"]]
    control_plane.request("POST", path, document)


def service_account_token(control_plane, namespace: str, name: str) -> str:
    answer = control_plane.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    return answer["status"]["token"]


def without_verb(role: dict, resource: str, verb: str, name: str) -> dict:
    """A copy of `role` named `name` that lacks `verb` on `resource`."""
    changed = copy.deepcopy(role)
    changed["metadata"]["name"] = name
    for rule in changed["rules"]:
        if resource in rule["resources"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    return changed


class Accounts:
    """deploy/rbac.yaml installed in the test namespace, and a kubeconfig with a context per account."""

    def __init__(self, control_plane, namespace: str, directory: Path):
        self.control_plane, self.namespace = control_plane, namespace
        self.documents = rbac_documents(namespace)
        for document in self.documents:
            create(control_plane, namespace, document)
        self.kubeconfig = directory / "kubeconfig"
        self.users: dict[str, str] = {}
        for name in (STATUS, STEPPER, GITOPS):
            self.add_user(name)

    def role(self, name: str) -> dict:
        return next(d for d in self.documents if d["kind"] == "Role" and d["metadata"]["name"] == name)

    def add_account(self, name: str, role: dict) -> None:
        """A service account bound to exactly `role` (created here)."""
        create(self.control_plane, self.namespace, role)
        create(self.control_plane, self.namespace, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                    "metadata": {"name": name}})
        create(self.control_plane, self.namespace, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": self.namespace}]})
        self.add_user(name)

    def add_user(self, name: str) -> None:
        self.users[name] = service_account_token(self.control_plane, self.namespace, name)
        config = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "testenv", "cluster": {"server": self.control_plane.server,
                                                         "certificate-authority": str(self.control_plane.ca_file)}}],
            "users": [{"name": user, "user": {"token": token}} for user, token in self.users.items()],
            "contexts": [{"name": user, "context": {"cluster": "testenv", "user": user, "namespace": self.namespace}}
                         for user in self.users],
            "current-context": STATUS,
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))


def run(stepper, accounts: Accounts, context: str, *args: str):
    """The CLI as `context` of the accounts' kubeconfig (stepper's runner, another kubeconfig)."""
    from kubectl_disagg.cli import main

    stepper.capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*args, "--kubeconfig", str(accounts.kubeconfig), "--context", context])
    out, err = stepper.capsys.readouterr()
    assert "Traceback" not in err
    return exited.value.code, out, err

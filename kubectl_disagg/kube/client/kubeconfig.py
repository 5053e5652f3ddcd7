"""Finding the API server and credentials the way kubectl does: kubeconfig, context, namespace.

`load_configuration` returns a `Connection` (where the server is, how to trust it, who we are)
and the context's namespace: from --kubeconfig (else the files of $KUBECONFIG, merged as
kubectl merges them, else ~/.kube/config) and --context (else the current one), or, inside a
pod with no kubeconfig at all, from the service account. Read by our own code rather than the
Kubernetes client package: importing that package cost a cluster command more time than
everything else it does on a small set (BENCHMARKS.md). Nothing a kubeconfig holds in secret
ever reaches a message.

About 480 lines on purpose: kubectl's whole reading of a kubeconfig (merging, contexts,
namespaces, the four kinds of credential, impersonation) is one rule set that a change to one
part of tends to touch the others; split, each piece would import the rest.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import MAX_INPUT_BYTES, load_plain
from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE
from kubectl_disagg.manifests.source import JsonObject

DEFAULT_KUBECONFIG = "~/.kube/config"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


@dataclass(frozen=True)
class ExecPlugin:
    """A user's exec credential plugin (client.authentication.k8s.io), as the kubeconfig names it.

    `args`: a tuple of str; `env`: a tuple of (name, value); `base_dir`: where a relative
    command is found from (the kubeconfig's directory, as kubectl does).
    """

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = EXEC_API_VERSIONS[0]
    interactive_mode: str = "IfAvailable"
    provide_cluster_info: bool = False
    install_hint: str = ""
    base_dir: str = "."


@dataclass(frozen=True)
class OidcProvider:
    """A user's oidc auth-provider: its `config` (str → str, as the kubeconfig holds it), the file
    that holds the user entry (where refreshed tokens are written back) and how messages name it."""

    config: Mapping[str, str]
    kubeconfig_path: str
    user_name: str
    whose: str


@dataclass(frozen=True)
class Connection:
    """Everything needed to reach one API server as one user.

    `whose`: how messages name the credentials ("user alice in kubeconfig ~/.kube/config").
    PEM fields are bytes; `exec_plugin`: an ExecPlugin or None; `kubeconfig`: the file named
    in exec-plugin messages; `cluster_info`: what an exec plugin may ask for
    (provideClusterInfo); `impersonate`: Impersonate-* headers from the user's as,
    as-groups …, a tuple of (name, value); `oidc`: the user's oidc auth-provider (oidc.OidcProvider)
    or None.
    """

    server: str
    whose: str
    ca_pem: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    exec_plugin: ExecPlugin | None = None
    kubeconfig: str | None = None
    user_name: str = "?"
    cluster_info: dict[str, Any] | None = None
    impersonate: tuple[tuple[str, str], ...] = ()
    oidc: OidcProvider | None = None


@dataclass(frozen=True)
class Impersonation:
    """kubectl's --as, --as-group and --as-uid: who the requests act as. Each flag given
    replaces the same field of the kubeconfig user's `as`, `as-groups`, `as-uid`, as kubectl's
    flags override the kubeconfig."""

    user: str | None = None
    groups: tuple[str, ...] = ()
    uid: str | None = None


def load_configuration(kubeconfig: str | None, context: str | None,
                       impersonation: Impersonation | None = None) -> tuple[Connection, str]:
    """The connection and the context's namespace, found the way kubectl finds them."""
    if _in_pod(kubeconfig):
        connection, namespace = _in_cluster()
    else:
        paths, shown = _paths(kubeconfig)
        merged = _merge(paths, shown)
        connection, namespace = _from_context(merged, context, shown)
        _check_credentials(connection)
    headers = _impersonating(connection.impersonate, impersonation or Impersonation())
    return replace(connection, impersonate=headers), namespace


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace kubectl works in when -n is not given, as `load_configuration` finds it, for
    a command that does not connect (the --gitops commands place a set that names none there):
    the context's namespace, else default; in a pod without a kubeconfig, its service account's.
    Without any kubeconfig file, or without a current context, default, as kubectl's."""
    if _in_pod(kubeconfig):
        return _service_account_namespace()
    paths, shown = _paths(kubeconfig)
    if not any(os.path.exists(os.path.expanduser(path)) for path in paths):
        return DEFAULT_NAMESPACE
    merged = _merge(paths, shown)
    if not (context or merged.current_context):
        return DEFAULT_NAMESPACE
    return _namespace(_context(merged, context, shown))


def _in_pod(kubeconfig: str | None) -> bool:
    """Inside a pod with no kubeconfig at all: the service account is the configuration."""
    return not kubeconfig and not os.environ.get("KUBECONFIG") and bool(os.environ.get("KUBERNETES_SERVICE_HOST")) \
        and not os.path.exists(os.path.expanduser(DEFAULT_KUBECONFIG))


def context_names(kubeconfig: str | None) -> list[str]:
    """The contexts of the kubeconfig files kubectl would read (what `--context` completes to)."""
    return sorted(_merge(*_paths(kubeconfig)).contexts)


def _paths(kubeconfig: str | None) -> tuple[list[str], str]:
    """The kubeconfig files to merge, and how messages name them: --kubeconfig, else
    $KUBECONFIG's list, else ~/.kube/config."""
    from_env = os.environ.get("KUBECONFIG")
    if kubeconfig:
        if not os.path.isfile(os.path.expanduser(kubeconfig)):
            raise UserError(f"--kubeconfig {kubeconfig}: no such file")
        return [kubeconfig], kubeconfig
    if from_env:
        return [p for p in from_env.split(os.pathsep) if p], from_env
    return [DEFAULT_KUBECONFIG], DEFAULT_KUBECONFIG


# --- reading and merging kubeconfig files ----------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """A kubeconfig entry (a dict), the directory its relative paths are relative to (the
    directory of the file that holds it) and that file."""

    body: JsonObject
    base_dir: str
    path: str | None = None


class _Merged:
    def __init__(self) -> None:
        self.clusters: dict[str, _Entry] = {}
        self.users: dict[str, _Entry] = {}
        self.contexts: dict[str, _Entry] = {}
        self.current_context = ""


def _merge(paths: list[str], shown: str) -> _Merged:
    """The files' clusters, users and contexts: the first file to define a name wins, and the
    first non-empty current-context wins, as kubectl merges $KUBECONFIG. Missing files in a
    list are skipped; none at all is an error."""
    merged, found = _Merged(), False
    for path in paths:
        full = os.path.expanduser(path)
        try:
            document = load_plain(read_bounded(full))
        except FileNotFoundError:
            continue
        except OSError as err:
            raise UserError(f"kubeconfig {path}: cannot be read: {err.strerror or err}") from None
        except ValueError as err:  # not YAML
            raise UserError(f"kubeconfig {path}: cannot be read: {' '.join(redact_url(str(err)).split())}") from None
        found = True
        if document is None:
            continue
        if not isinstance(document, dict):
            raise UserError(f"kubeconfig {path}: cannot be read: not a kubeconfig (a mapping is expected)")
        base_dir = os.path.dirname(os.path.abspath(full))
        for key, into in (("clusters", merged.clusters), ("users", merged.users), ("contexts", merged.contexts)):
            entries = document.get(key) or []
            if not isinstance(entries, list):
                raise UserError(f"kubeconfig {path}: cannot be read: {key} must be a list")
            for entry in entries:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise UserError(f"kubeconfig {path}: cannot be read: every entry of {key} needs a name")
                body = entry.get(key[:-1]) or {}
                if not isinstance(body, dict):
                    raise UserError(f"kubeconfig {path}: cannot be read: {key[:-1]} {entry['name']} must be a mapping")
                into.setdefault(entry["name"], _Entry(body, base_dir, full))
        if not merged.current_context and document.get("current-context"):
            merged.current_context = str(document["current-context"])
    if not found:
        raise UserError(f"kubeconfig {shown}: no such file; pass --kubeconfig, set KUBECONFIG, "
                        "or run inside a pod with a service account")
    return merged


def _context(merged: _Merged, wanted: str | None, shown: str) -> JsonObject:
    """The context --context names, else the current one."""
    name = wanted or merged.current_context
    if not name:
        raise UserError(f"kubeconfig {shown}: no current context; pass --context")
    if name not in merged.contexts:
        known = ", ".join(sorted(merged.contexts)) or "none"
        raise UserError(f'kubeconfig {shown}: context "{name}" not found (contexts: {known})')
    return merged.contexts[name].body


def _namespace(context: JsonObject) -> str:
    return str(context.get("namespace") or DEFAULT_NAMESPACE)


def _from_context(merged: _Merged, wanted: str | None, shown: str) -> tuple[Connection, str]:
    name = wanted or merged.current_context
    context = _context(merged, wanted, shown)
    cluster_name, user_name = str(context.get("cluster") or ""), str(context.get("user") or "")
    if cluster_name not in merged.clusters:
        raise UserError(f'kubeconfig {shown}: context "{name}" names cluster "{cluster_name}", which is not defined')
    if user_name and user_name not in merged.users:
        raise UserError(f'kubeconfig {shown}: context "{name}" names user "{user_name}", which is not defined')
    cluster = merged.clusters[cluster_name]
    user = merged.users.get(user_name, _Entry({}, "."))
    whose = f"user {user_name or '?'} in kubeconfig {shown}"
    where = f"kubeconfig {shown}: cluster {cluster_name}"
    server = str(cluster.body.get("server") or "")
    if not server:
        raise UserError(f"{where}: no server URL")
    insecure = bool(cluster.body.get("insecure-skip-tls-verify"))
    if insecure and (cluster.body.get("certificate-authority") or cluster.body.get("certificate-authority-data")):
        # client-go's transport refuses the pair with these words (kubectl prints them)
        raise UserError(f"{where}: specifying a root certificates file with the insecure flag is not allowed "
                        "(insecure-skip-tls-verify and certificate-authority are both set: remove one)")
    ca_pem = None if insecure else _data_or_file(cluster, "certificate-authority", where)
    connection = Connection(
        server=server.rstrip("/"), whose=whose, ca_pem=ca_pem, insecure=insecure,
        tls_server_name=cluster.body.get("tls-server-name") or None,
        proxy_url=cluster.body.get("proxy-url") or None,
        client_cert_pem=_data_or_file(user, "client-certificate", whose),
        client_key_pem=_data_or_file(user, "client-key", whose),
        token=_token(user, whose), token_file=_path(user, "tokenFile"),
        exec_plugin=_exec_plugin(user, whose), oidc=_oidc(user, user_name, whose), kubeconfig=shown,
        user_name=user_name or "?",
        cluster_info=_cluster_info(server, cluster.body, ca_pem, insecure), impersonate=_impersonation(user.body))
    if (connection.client_cert_pem is None) != (connection.client_key_pem is None):
        raise UserError(f"{whose}: a client certificate needs both client-certificate and client-key")
    return connection, _namespace(context)


def _path(entry: _Entry, key: str) -> str | None:
    value = entry.body.get(key)
    if not value:
        return None
    value = os.path.expanduser(str(value))
    return value if os.path.isabs(value) else os.path.join(entry.base_dir, value)


def _data_or_file(entry: _Entry, key: str, where: str) -> bytes | None:
    """`<key>-data` (base64) or the file named by `<key>`, relative to the kubeconfig."""
    data = entry.body.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError):
            raise UserError(f"{where}: {key}-data is not valid base64") from None
    path = _path(entry, key)
    if path is None:
        return None
    try:
        return read_bounded(path)
    except OSError as err:
        raise UserError(f"{where}: {key} {path}: {err.strerror or err}") from None


def _token(user: _Entry, whose: str) -> str | None:
    token = user.body.get("token")
    if token:
        return str(token)
    provider = user.body.get("auth-provider")
    if isinstance(provider, dict) and provider:
        name = str(provider.get("name") or "?")
        if name == "oidc":
            return None  # see `_oidc`
        raise UserError(f"{whose}: the {name} auth-provider is not supported (kubectl dropped the built-in "
                        "ones); use the provider's exec credential plugin (e.g. gke-gcloud-auth-plugin, "
                        "kubelogin) in the user entry instead")
    if user.body.get("username") or user.body.get("password"):
        raise UserError(f"{whose}: username/password (basic authentication) is set, which Kubernetes API "
                        "servers do not accept since v1.19 (requests would run as system:anonymous); use a "
                        "token, a client certificate or an exec plugin")
    return None


def _oidc(user: _Entry, user_name: str, whose: str) -> OidcProvider | None:
    """The user's `auth-provider: oidc` (run by oidc.py), or None. client-go's oidc provider
    requires an issuer and a client id before anything is sent."""
    provider = user.body.get("auth-provider")
    if not isinstance(provider, dict) or provider.get("name") != "oidc" or user.path is None:
        return None  # a user entry no file holds (none found) has no auth-provider
    config = provider.get("config") or {}
    config = {str(key): str(value) for key, value in config.items()} if isinstance(config, dict) else {}
    for key in ("idp-issuer-url", "client-id"):
        if not config.get(key):
            raise UserError(f"{whose}: the oidc auth-provider needs {key} (kubectl refuses it too)")
    return OidcProvider(config=config, kubeconfig_path=user.path, user_name=user_name, whose=whose)


def _exec_plugin(user: _Entry, whose: str) -> ExecPlugin | None:
    spec = user.body.get("exec")
    if not spec:
        return None
    if not isinstance(spec, dict) or not spec.get("command"):
        raise UserError(f"{whose}: exec needs a command")
    api_version = str(spec.get("apiVersion") or "")
    if api_version not in EXEC_API_VERSIONS:
        raise UserError(f"{whose}: exec apiVersion {api_version or '(none)'} is not supported "
                        f"(supported: {', '.join(EXEC_API_VERSIONS)})")
    env = tuple((str(e.get("name")), str(e.get("value", ""))) for e in spec.get("env") or []
                if isinstance(e, dict) and e.get("name"))
    return ExecPlugin(command=str(spec["command"]), args=tuple(str(a) for a in spec.get("args") or []), env=env,
                      api_version=api_version, interactive_mode=str(spec.get("interactiveMode") or "IfAvailable"),
                      provide_cluster_info=bool(spec.get("provideClusterInfo")),
                      install_hint=str(spec.get("installHint") or ""), base_dir=user.base_dir)


def _impersonation(user: JsonObject) -> tuple[tuple[str, str], ...]:
    """The headers kubectl sends for a user entry's `as`, `as-uid`, `as-groups`, `as-user-extra`."""
    headers: list[tuple[str, str]] = []
    if user.get("as"):
        headers.append(("Impersonate-User", str(user["as"])))
    if user.get("as-uid"):
        headers.append(("Impersonate-Uid", str(user["as-uid"])))
    headers += [("Impersonate-Group", str(group)) for group in user.get("as-groups") or []]
    for key, values in sorted((user.get("as-user-extra") or {}).items()):
        headers += [(f"Impersonate-Extra-{key}", str(value)) for value in values or []]
    return tuple(headers)


def _impersonating(headers: tuple[tuple[str, str], ...],
                   flags: Impersonation) -> tuple[tuple[str, str], ...]:
    """The Impersonate-* headers of the kubeconfig with the flags' fields in place of theirs;
    groups, a uid or extras without a user to impersonate are refused, as kubectl refuses them."""
    replaced = {name for name, given in (("Impersonate-User", flags.user), ("Impersonate-Uid", flags.uid),
                                         ("Impersonate-Group", flags.groups)) if given}
    kept = [(name, value) for name, value in headers if name not in replaced]
    given = ([("Impersonate-User", flags.user)] if flags.user else []) + \
        ([("Impersonate-Uid", flags.uid)] if flags.uid else []) + \
        [("Impersonate-Group", group) for group in flags.groups]
    out = tuple(sorted(kept + given, key=lambda header: _IMPERSONATION_ORDER.index(_impersonation_kind(header[0]))))
    if out and not any(name == "Impersonate-User" for name, _ in out):
        raise UserError("--as-group, --as-uid (or the kubeconfig's as-groups, as-uid, as-user-extra) need a user "
                        "to impersonate: pass --as USER")
    return out


_IMPERSONATION_ORDER = ("Impersonate-User", "Impersonate-Uid", "Impersonate-Group", "Impersonate-Extra-")


def _impersonation_kind(name: str) -> str:
    return "Impersonate-Extra-" if name.startswith("Impersonate-Extra-") else name


def _cluster_info(server: str, cluster: JsonObject, ca_pem: bytes | None, insecure: bool) -> JsonObject:
    """The Cluster an exec plugin is told about when it asks (spec.cluster of ExecCredential)."""
    info: dict[str, Any] = {"server": server}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = cluster["tls-server-name"]
    if insecure:
        info["insecure-skip-tls-verify"] = True
    if ca_pem:
        info["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    if cluster.get("proxy-url"):
        info["proxy-url"] = cluster["proxy-url"]
    extension = next((e.get("extension") for e in cluster.get("extensions") or []
                      if isinstance(e, dict) and e.get("name") == "client.authentication.k8s.io/exec"), None)
    if extension is not None:
        info["config"] = extension
    return info


# --- inside a pod -------------------------------------------------------------------------------


def _in_cluster() -> tuple[Connection, str]:
    """The pod's service account: its token (re-read as it rotates), its CA, the service's address."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not port:
        raise UserError("in-cluster configuration: KUBERNETES_SERVICE_PORT is not set")
    token_file = os.path.join(SERVICE_ACCOUNT_DIR, "token")
    if not os.path.isfile(token_file):
        raise UserError(f"in-cluster configuration: no service account token at {token_file} "
                        "(is automountServiceAccountToken off?)")
    try:
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt"), "rb") as f:
            ca_pem = f.read()
    except OSError as err:
        raise UserError(f"in-cluster configuration: cannot read the service account CA: {err.strerror or err}") \
            from None
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    connection = Connection(server=server, whose="the service account", ca_pem=ca_pem, token_file=token_file)
    _check_credentials(connection)
    return connection, _service_account_namespace()


def _service_account_namespace() -> str:
    try:
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "namespace")) as f:
            return f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


# --- credentials ------------------------------------------------------------------------------
# Nothing a kubeconfig holds in secret (tokens, passwords, a URL's user info, what an exec
# plugin prints) ever reaches a message: errors name the user and the kubeconfig instead.

# Compiled on first use (re caches it): only a text with an "@" can hold user info.
_URL_USERINFO = r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@"


def redact_url(text: str) -> str:
    """`text` with the user info of every URL in it (`https://user:secret@host`) blanked out."""
    if "@" not in text:
        return text
    return re.sub(_URL_USERINFO, lambda m: m.group("scheme") + "***@", text)


def read_bounded(path: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a file a kubeconfig names (or the kubeconfig itself), at most `limit`; raises
    OSError, whose strerror says so, for a larger one: `/dev/zero` as a tokenFile would otherwise
    be read until memory runs out."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(0, f"larger than {limit // (1024 * 1024)} MiB", path)
    return data


def check_token(token: str, whose: str, source: str) -> None:
    """Refuse a token that cannot be sent as an HTTP header, without printing it.

    Python's HTTP client would raise on it mid-request (a traceback holding the token);
    client-go refuses it too. `source` names where it came from: "token", "exec plugin X".
    """
    if not (token.isascii() and token.isprintable()):  # printable ASCII: " " to "~"
        problem = "a line break" if ("\n" in token or "\r" in token) else "characters outside printable ASCII"
        raise UserError(f"{whose}: the credential from its {source} contains {problem}, so it cannot be "
                        "sent in an HTTP header (it is not shown here); fix the token and try again")


def _check_credentials(connection: Connection) -> None:
    if connection.token:
        check_token(connection.token, connection.whose, "token")
    if "@" in connection.server and re.match(_URL_USERINFO, connection.server):
        # Go's HTTP client would send these as basic auth; here they would only leak into messages.
        raise UserError(f"{connection.whose}: the server URL {redact_url(connection.server)} carries a user name "
                        "and password; Kubernetes API servers do not accept basic authentication: use a token, "
                        "a client certificate or an exec plugin in the user entry instead")
    if not connection.server.startswith(("https://", "http://")):
        raise UserError(f"{connection.whose}: the server URL {redact_url(connection.server)} is not an "
                        "http(s) URL")

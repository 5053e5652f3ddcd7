"""Where one `rollout status -o json` process spends its time: run as a child, prints JSON.

    python benchmarks/status_phases.py KUBECONFIG FILE

Times, in order, what the command does: imports (the CLI and the status command), kubeconfig,
the two LISTs (bytes on the wire, then JSON decoding, apart), building the snapshot, the pure
core (reconcile, derive_status, to_document) and formatting the JSON output. Interpreter
start-up is what is left of the whole-process wall time (the parent measures that).
"""

from __future__ import annotations

import json
import sys
import time

T0 = time.perf_counter()


def main() -> None:
    kubeconfig, filename = sys.argv[1], sys.argv[2]
    phases: dict[str, float] = {}
    mark = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        phases[name] = phases.get(name, 0.0) + (now - mark[0])
        mark[0] = now

    import kubectl_disagg.cli  # noqa: F401  (the entry point and the click command tree)
    import kubectl_disagg.commands.rollout_status  # noqa: F401  (the command, what it uses: core, cluster, output)
    from kubectl_disagg.core.api import naming
    from kubectl_disagg.core.controller.reconcile import reconcile
    from kubectl_disagg.commands._inputs import sets_from_files
    from kubectl_disagg.commands._options import Options
    from kubectl_disagg.core.controller.snapshot import Snapshot, lws_from_object, service_from_object
    from kubectl_disagg.core.delivery.status import derive_status, to_document
    from kubectl_disagg.kube.client import rest
    from kubectl_disagg.kube.client.kubeconfig import load_configuration
    from kubectl_disagg.manifests.writer import format_objects
    lap("imports (entry point, click, the status command: core, cluster modules, output)")
    options = Options()
    options.filenames = (filename,)
    (ds,) = sets_from_files(options)
    lap("read and validate the file")
    connection, _ = load_configuration(kubeconfig, None)
    client = rest.RestClient(connection, connection.server)
    lap("kubeconfig and client set-up")
    selector = f"{naming.NAME_LABEL}={ds.name}"
    raw = {}
    for resource in (rest.LWS, rest.SERVICE):
        raw[resource.kind] = client.send("GET", rest.path_of(resource, ds.namespace), {"labelSelector": selector}).data
        lap(f"LIST {resource.plural} (request, TLS on the first, bytes)")
    decoded = {kind: json.loads(data) for kind, data in raw.items()}
    lap("JSON decoding of both LISTs")
    lws_items = [rest.with_kind(i, rest.LWS) for i in decoded["LeaderWorkerSet"].get("items") or []]
    svc_items = [rest.with_kind(i, rest.SERVICE) for i in decoded["Service"].get("items") or []]
    snapshot = Snapshot(namespace=ds.namespace, lws=tuple(lws_from_object(i) for i in lws_items),
                        services=tuple(service_from_object(i) for i in svc_items),
                        objects={(o["kind"], o["metadata"]["name"]): o for o in (*lws_items, *svc_items)})
    lap("building the snapshot")
    document = to_document(derive_status(ds, snapshot, reconcile(ds, snapshot)), "2026-01-01T00:00:00Z")
    lap("reconcile + derive_status + to_document")
    text = format_objects([document], "json")
    lap("JSON output")
    phases["bytes read"] = sum(len(d) for d in raw.values())
    phases["in-process total"] = time.perf_counter() - T0
    print(json.dumps(phases))
    del text


if __name__ == "__main__":
    main()

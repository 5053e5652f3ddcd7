"""The fuzz campaign's last property, against the real API server: whatever `render` exits 0 on,
the API server accepts (server-side apply dry run of every rendered object, for a sample).

The objects go as JSON through `server_dry_run.dry_run_apply` (what `validate --server` sends), not through
`kubectl apply --server-side`: kubectl re-encodes YAML apply bodies with Go's JSON encoder, which leaves
C1 control characters (U+007F to U+009F) raw, and the API server's YAML reader then refuses them —
a kubectl quirk for any manifest holding such a character (docs/reliability.md)."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from kubectl_disagg.kube.client import dry_run_apply
from kubectl_disagg.kube.session import Session
from tests.support.fuzzing import check_input, mutated_templates, rendered_objects

SAMPLE = int(os.environ.get("KUBECTL_DISAGG_FUZZ_SERVER_EXAMPLES", "30"))
FIGURES: Counter = Counter()


def test_what_render_accepts_the_api_server_accepts(control_plane, namespace):
    cluster = Session(kubeconfig=str(control_plane.kubeconfig))
    @settings(max_examples=SAMPLE, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated_templates())
    def run(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as directory:
            output = check_input(data, Path(directory))
        FIGURES["inputs"] += 1
        objects = rendered_objects(output) if output else []
        if not objects:
            return
        FIGURES["rendered inputs sent"] += 1
        for obj in objects:
            obj["metadata"]["namespace"] = namespace
            refusal = dry_run_apply(cluster.client, obj)
            FIGURES["objects sent"] += 1
            assert refusal is None, f"render exit 0 but the API server refused: {refusal}\ninput:\n{data.decode(errors='replace')}"

    with cluster:
        run()
    print("\nfuzz server figures:", dict(sorted(FIGURES.items())))
    assert FIGURES["rendered inputs sent"] > 0

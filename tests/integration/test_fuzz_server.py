"""The fuzz campaign's last property, against the real API server: whatever `render` exits 0 on,
the API server accepts (server-side apply dry run of every rendered object, for a sample)."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from kubectl_disagg.output import to_yaml_stream
from tests.fuzzing import check_input, mutated_templates, rendered_objects

SAMPLE = int(os.environ.get("KUBECTL_DISAGG_FUZZ_SERVER_EXAMPLES", "30"))
FIGURES: Counter = Counter()


def test_what_render_accepts_the_api_server_accepts(control_plane, namespace):
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
        for obj in objects:
            obj["metadata"]["namespace"] = namespace
        result = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                       input=to_yaml_stream(objects), check=False)
        FIGURES["rendered inputs sent"] += 1
        FIGURES["objects sent"] += len(objects)
        assert result.returncode == 0, f"render exit 0 but the API server refused:\n{result.stderr}\ninput:\n{data.decode(errors='replace')}"

    run()
    print("\nfuzz server figures:", dict(sorted(FIGURES.items())))
    assert FIGURES["rendered inputs sent"] > 0

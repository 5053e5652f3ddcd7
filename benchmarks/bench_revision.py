"""Cost of the controller's revision on the render path (kubectl_disagg/core/api/revision.py).

Cold: in a fresh interpreter, loading the generated type table and hashing
examples/prefill-decode.yaml for the first time (the table is read and its structs compiled
on first use), best of 15 processes. Warm: `fill_defaults` + `compute_revision` of an
already loaded set, best of 5 repeats of 200. Also the whole loading of the example (read,
validate, default, hash: `load_documents` of the parsed stream) cold, the number `render` pays.

    python benchmarks/bench_revision.py
"""

from __future__ import annotations

import subprocess
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "prefill-decode.yaml"
BIG = ROOT / "examples" / "encode-prefill-decode.yaml"

COLD = f"""
import time
from kubectl_disagg.core.api import revision
from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.manifests.reader import parse_stream
start = time.perf_counter()
with open({str(EXAMPLE)!r}) as f:
    (ds,) = load_sets(parse_stream(f.read(), {str(EXAMPLE)!r}))
loaded = time.perf_counter()
revision._table = None
start_hash = time.perf_counter()
revision.compute_revision([(role.name, role.template) for role in ds.roles])
print((loaded - start) * 1000, (time.perf_counter() - start_hash) * 1000)
"""


def cold() -> tuple[float, float]:
    runs = [tuple(map(float, subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True,
                                            check=True).stdout.split())) for _ in range(15)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def warm(path: Path) -> float:
    import copy

    from kubectl_disagg.core.api import revision
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream

    (ds,) = load_sets(parse_stream(path.read_text(), str(path)))
    roles = [(role.name, role.template) for role in ds.roles]

    def once():
        revision.compute_revision([(name, revision.fill_defaults(copy.deepcopy(t))) for name, t in roles])

    return min(timeit.repeat(once, number=200, repeat=5)) / 200 * 1000


def main() -> None:
    load_ms, hash_ms = cold()
    print(f"cold loading of {EXAMPLE.name} (read, validate, default, hash): {load_ms:.2f} ms")
    print(f"cold table load + first hash of {EXAMPLE.name}: {hash_ms:.2f} ms")
    for path in (EXAMPLE, BIG):
        print(f"warm fill_defaults + compute_revision, {path.name}: {warm(path):.3f} ms")


if __name__ == "__main__":
    main()

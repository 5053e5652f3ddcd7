"""hack/test_tiers.py, what `make test` runs: the three tiers on parallel workers, each module whole on
one worker and the upstream stack's modules together (tests/conftest.py), then each tier's wall time
and the slowest tests of all; run here on a tree of a few tests with the suite's own conftest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

from tests.support.hack_modules import hack_module
from tests.support.paths import REPO

tiers = hack_module("test_tiers.py")

# Each run starts pytest up to nine times (three tiers, each a controller and two workers): without the
# cache and without the hypothesis plugin, whose import is most of a pytest start (these tests use
# no hypothesis).
QUIET = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
WHERE = "import os, pathlib\n\ndef where(name):\n    pathlib.Path(name).write_text(os.environ.get('PYTEST_XDIST_WORKER', 'main'))\n"
FILES = {
    "pytest.ini": "[pytest]\nmarkers =\n    integration: the last tier\n    programs: the second tier\n",
    "tests/unit/test_a.py": "import time\n\ndef test_slow():\n    time.sleep(0.3)\n\ndef test_fast():\n    pass\n",
    "tests/unit/test_b.py": "def test_fails():\n    assert 1 == 2\n",
    **{f"tests/integration/test_upstream_{name}.py": WHERE + textwrap.dedent(f"""
        import pytest
        pytestmark = pytest.mark.integration

        def test_{name}():
            where("{name}")
        """) for name in ("one", "two", "three")},
    "tests/integration/test_other.py": "import pytest\n\n@pytest.mark.integration\ndef test_other():\n    pass\n",
    "tests/unit/test_c.py": "import pytest\n\n@pytest.mark.programs\ndef test_runs_a_program():\n    pass\n",
}


def test_the_tiers_run_on_workers_in_order_and_their_times_and_slowest_tests_are_printed(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    result = subprocess.run([sys.executable, str(REPO / "hack" / "test_tiers.py"), "--workers", "2", "--slowest", "3",
                             *QUIET, "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr  # the unit tier's failure, though the others passed
    assert "1 failed, 2 passed" in result.stdout and "1 passed" in result.stdout and "4 passed" in result.stdout
    summary = result.stdout[result.stdout.index("test tiers on 2 workers: "):].splitlines()
    assert summary[0].startswith("test tiers on 2 workers: unit tier ")
    assert "(3 tests), programs tier " in summary[0] and "(1 test), integration tier " in summary[0]  # in this order
    assert summary[0].endswith(" in all") and "(4 tests)" in summary[0]
    assert summary[1] == "the slowest 3 tests:" and summary[2].endswith("s  tests/unit/test_a.py::test_slow")
    assert len(summary) == 6 and summary[5] == "total: 7 passed, 1 failed, 0 skipped"
    workers = {(tmp_path / name).read_text() for name in ("one", "two", "three")}
    assert len(workers) == 1 and workers < {"gw0", "gw1"}  # the upstream stack's modules on one worker


def tiers_of(tmp_path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_a.py").write_text("def test_a():\n    print('shown')\n")
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    return subprocess.run([sys.executable, str(REPO / "hack" / "test_tiers.py"), *args, *QUIET,
                           "-o", "markers=integration"], cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_a_tier_that_collects_nothing_is_no_failure(tmp_path):
    result = tiers_of(tmp_path, "--workers", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test tiers on 1 process: unit tier " in result.stdout
    assert "(1 test), programs tier " in result.stdout and "(0 tests), integration tier " in result.stdout


def test_one_tier_and_its_output_shown_in_one_process(tmp_path):
    result = tiers_of(tmp_path, "--tier", "unit", "--workers", "2", "-s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "shown" in result.stdout and "-n 2" not in result.stdout
    assert "test tiers on 1 process: unit tier " in result.stdout and "integration tier" not in result.stdout


def test_times_are_spelled_in_seconds_then_minutes():
    assert [tiers.spelled(s) for s in (8.42, 59.9, 72.4, 661)] == ["8.4 s", "59.9 s", "1 min 12 s", "11 min 1 s"]


STARTED = "import os, time\n\ndef started(name):\n    with open(os.environ['STARTS'], 'a') as f:\n        f.write(f'{time.monotonic()} {name}\\n')\n"
BY_DURATION = {
    "pytest.ini": "[pytest]\nmarkers =\n    integration: the last tier\n",
    "tests/test_long.py": STARTED + "\ndef test_long():\n    started('long')\n    time.sleep(1)\n",
    **{f"tests/test_{name}.py": STARTED + "".join(f"\ndef test_{n}():\n    started('{name}')\n" for n in range(3))
       for name in ("m1", "m2")},
}


def test_the_modules_that_took_longest_last_time_go_to_the_workers_first(tmp_path):
    for name, text in BY_DURATION.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    firsts = []
    for run in ("first", "second"):  # the second with the first's durations
        starts = tmp_path / f"starts of the {run} run"
        result = subprocess.run([sys.executable, str(REPO / "hack" / "test_tiers.py"), "--tier", "unit", *QUIET, "-q"],
                                cwd=tmp_path, env={**os.environ, "STARTS": str(starts)}, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        first: dict[str, float] = {}
        for line in starts.read_text().splitlines():
            at, module = line.split()
            first.setdefault(module, float(at))
        firsts.append(first)
    kept = json.loads((tmp_path / ".test-durations" / "unit.json").read_text())["durations"]
    assert set(kept) == {"tests/test_long.py::test_long"} | {f"tests/test_{m}.py::test_{n}" for m in ("m1", "m2")
                                                            for n in range(3)}
    # At first pytest-xdist's order, most tests first: the long module waits for a worker to be free.
    assert firsts[0]["long"] > max(firsts[0]["m1"], firsts[0]["m2"])
    # Then the longest first: a worker starts it at once, and one of the others after it.
    assert firsts[1]["long"] < max(firsts[1]["m1"], firsts[1]["m2"])

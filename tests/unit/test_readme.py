"""The README leads: short, naming the test command and the way into docs/."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
README_LIMIT = 15 * 1024


def test_the_readme_leads_and_stays_short():
    # What it is, install, set-up, a quick start and the links: the rest lives in docs/ and
    # CONTRIBUTING.md (the package table among it), so the README stays one screenful of reading.
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= README_LIMIT, f"README.md is {len(readme)} bytes, over {README_LIMIT}"
    assert b"make test" in readme and b"docs/index.md" in readme

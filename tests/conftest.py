"""Options and fixtures shared by every test tier (helpers live in tests/support/)."""

from __future__ import annotations


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite the golden files under tests/data/golden from the current output")

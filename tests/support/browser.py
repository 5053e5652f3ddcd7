"""Debian's Chromium driven through Selenium and chromium-driver, for the dashboard's tests
(kubectl_disagg/dashboard). Missing pieces skip the test, naming what is missing; under
CI=true they fail it instead (.ci/run installs them: hack/mermaid/install-browser.sh)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
# The docs' illustrations are taken again only when asked (`DASHBOARD_SCREENSHOTS=docs`): a test run
# leaves the tree as it was, and the pictures change when someone means them to.
ASKED = os.environ.get("DASHBOARD_SCREENSHOTS") == "docs"


def _missing(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; CI installs it (.ci/run, hack/mermaid/install-browser.sh), so CI must not skip")
    pytest.skip(message)


@contextlib.contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A headless Chromium under Selenium (its own profile, nothing fetched but what the page asks)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium not installed: pip install -e '.[test]'")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists()
                                                   else None)
    if browser is None:
        _missing("Chromium not on PATH: apt-get install chromium")
    if driver_path is None:
        _missing("chromedriver not on PATH: apt-get install chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver, name: str, directory: Path | None = None) -> Path:
    """The page as shown: under docs/images/ when asked (DASHBOARD_SCREENSHOTS=docs), else in
    `directory` (a test's temporary one); either way a PNG the browser drew."""
    target = DOCS_IMAGES if ASKED else directory
    if target is None:
        import tempfile

        target = Path(tempfile.mkdtemp(prefix="dashboard-"))
    target.mkdir(parents=True, exist_ok=True)
    path = target / name
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 0
    return path

"""The pull request charts as a reader's browser draws them: every Mermaid chart of the golden
files rendered to SVG by mermaid (from the npm registry, hack/mermaid/) in headless Chromium,
and its series read back from the drawing and checked against the planner's plan.

Needs Chromium (Debian's `chromium`) and mermaid installed by hack/mermaid/install.sh (`make
test` runs it; .ci/run installs Chromium). Where either is missing the test skips, naming
what; in CI (CI=true) it fails instead, as CI installs both.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kubectl_disagg.views.gitops_pr import pr_context
from kubectl_disagg.views.plan_chart import NEW_COLOR, OLD_COLOR
from tests.support.gitops_pr import GOLDEN, STATE_FILE, scenario_steps
from tests.support.paths import REPO
from tests.support.sets import NS

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--allow-file-access-from-files", "--virtual-time-budget=60000", "--dump-dom"]


def _missing(message: str):
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; CI installs it (.ci/run, hack/mermaid/install.sh), so CI must not skip")
    pytest.skip(message)


def mermaid_script() -> Path:
    if shutil.which("bash") is None:
        _missing("bash not on PATH")
    directory = subprocess.run(["bash", str(REPO / "hack" / "mermaid" / "install.sh"), "--dir"], check=True,
                               capture_output=True, text=True).stdout.strip()
    script = Path(directory) / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not script.is_file():
        _missing(f"mermaid not installed ({script} missing): run hack/mermaid/install.sh (needs node and npm)")
    return script


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    _missing("Chromium not on PATH: apt-get install chromium")


def render_in_browser(sources: list[str]) -> list[str]:
    """Each Mermaid source as the SVG text mermaid.render gives in Chromium (or "ERROR: ...")."""
    script, browser = mermaid_script(), chromium()
    with tempfile.TemporaryDirectory(prefix="mermaid-") as work:
        page = Path(work) / "charts.html"
        page.write_text(f"""<!doctype html>
<html><head><meta charset="utf-8"></head><body>
<script src="{script.as_uri()}"></script>
<script>
mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
(async () => {{
  const sources = {json.dumps(sources)};
  const out = [];
  for (let i = 0; i < sources.length; i++) {{
    try {{ out.push((await mermaid.render("chart" + i, sources[i])).svg); }}
    catch (e) {{ out.push("ERROR: " + e.message); }}
  }}
  const result = document.createElement("pre");
  result.id = "result";
  result.textContent = JSON.stringify(out);
  document.body.appendChild(result);
}})();
</script></body></html>
""", encoding="utf-8")
        run = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={Path(work) / 'profile'}", page.as_uri()],
                             capture_output=True, text=True, timeout=300)
    found = re.search(r'<pre id="result">(.*?)</pre>', run.stdout, re.S)
    assert found, f"Chromium printed no result (exit {run.returncode}): {run.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


# --- reading a drawn xychart back ---------------------------------------------------------------


def _translate(element: str) -> tuple[float, float]:
    x, y = re.search(r"translate\(([-0-9.]+), ([-0-9.]+)\)", element).groups()
    return float(x), float(y)


def read_chart(svg: str) -> dict:
    """Title, x labels, and per plot (in order) its color and values in the y axis's units."""
    def group(name):
        match = re.search(rf'<g class="{name}">(.*?)</g></g>', svg, re.S)
        assert match, f"no {name} in the drawing"
        return match.group(1)

    ticks = [(float(text), _translate(element)[1]) for element, text in
             re.findall(r'(<text [^>]*>)([-0-9.]+)</text>', group("left-axis"))]
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    scale = (y1 - y0) / (v1 - v0)

    def value(y):
        return (y - y0) / scale + v0

    tick_labels = re.search(r'<g class="label">(.*?)</g>', group("bottom-axis"), re.S).group(1)
    labels = re.findall(r"<text [^>]*>([^<]*)</text>", tick_labels)
    plots = []
    for kind, _index, body in re.findall(r'<g class="(bar|line)-plot-(\d+)">(.*?)</g>', svg, re.S):
        if kind == "line":
            path = re.search(r'd="M([^"]+)"', body).group(1)
            points = [tuple(map(float, point.split(","))) for point in path.split("L")]
            color = re.search(r'stroke="([^"]+)"', body).group(1)
            plots.append(("line", color, [value(y) for _, y in points]))
        else:
            rects = re.findall(r'<rect [^>]*y="([-0-9.]+)" [^>]*height="([-0-9.]+)" fill="([^"]+)"', body)
            plots.append(("bar", rects[0][2], [value(float(y)) for y, _, _ in rects]))
    title = re.search(r'<g class="chart-title"><text [^>]*>([^<]*)</text>', svg).group(1)
    return {"title": html.unescape(title), "labels": [html.unescape(label) for label in labels], "plots": plots}


def test_every_golden_chart_draws_the_plan():
    steps = scenario_steps()
    expected = []  # per chart: (golden file, role, plan steps, current step)
    sources = []
    for path in sorted(GOLDEN.glob("*.md")):
        ds, step = steps[path.name]
        context = pr_context(ds, NS, step, STATE_FILE)
        charts = [group["chart"] for group in context["groups"] if group["chart"] and group["chart"]["mermaid"]]
        found = re.findall(r"```mermaid\n(.*?)\n```", path.read_text(encoding="utf-8"), re.S)
        assert len(found) == sum(len(chart["mermaid"]) for chart in charts), path.name
        sources.extend(found)
        for chart in charts:
            expected.extend((path.name, role_index, ds.role_names[role_index], chart["steps"], chart["current"])
                            for role_index in range(len(chart["steps"][0].old)))
    assert sources, "no charts in the golden files"
    drawn = render_in_browser(sources)
    assert len(drawn) == len(expected)
    for svg, (name, role_index, role, plan, current) in zip(drawn, expected):
        assert not svg.startswith("ERROR"), f"{name}: mermaid refused the chart: {svg}"
        chart = read_chart(svg)
        assert chart["title"].startswith(f"{role}: old (grey) and new (blue)"), name
        assert chart["labels"] == [f"{i} ◀" if i == current else str(i) for i in range(len(plan))], name
        (bar_kind, bar_color, bars), (_, old_color, old), (_, new_color, new) = chart["plots"]
        assert (bar_kind, old_color, new_color) == ("bar", OLD_COLOR, NEW_COLOR), name
        assert [round(v, 3) for v in old] == [s.old[role_index] for s in plan], (name, role)
        assert [round(v, 3) for v in new] == [s.new[role_index] for s in plan], (name, role)
        assert max(range(len(bars)), key=bars.__getitem__) == current, (name, role, bars)  # the marked step

"""The main pages of the built docs in a real browser (headless Chromium, from Debian's
``chromium`` package; ``make screenshots`` installs it): at a 1280 px window nothing runs
off to the right, no code block scrolls sideways, every figure loads and fills the
content column. Screenshots are kept in ``docs/_build/screenshots``.

Skipped, saying why, where Chromium is not installed or the docs are not built.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
HTML = DOCS / "_build" / "html"
SHOTS = DOCS / "_build" / "screenshots"
PAGES = ("index", "quickstart", "choosing", "resharding", "performance")
WINDOW = "1280,2400"

#: Appended to a copy of each page: what the layout came to, written into the DOM.
PROBE = """<script>
window.addEventListener('load', () => {
  const root = document.documentElement;
  const article = document.querySelector('article') || document.body;
  const out = document.createElement('pre');
  out.id = 'layout-probe';
  out.textContent = JSON.stringify({
    page: [root.scrollWidth, root.clientWidth],
    column: Math.round(article.getBoundingClientRect().width),
    scrolling: [...document.querySelectorAll('pre')]
      .filter(p => p.scrollWidth > p.clientWidth + 1)
      .map(p => p.textContent.slice(0, 60)),
    figures: [...article.querySelectorAll('figure img, .figure img')].map(i => [
      i.getAttribute('src'), i.naturalWidth, Math.round(i.getBoundingClientRect().width)]),
  });
  document.body.appendChild(out);
});
</script>"""


def _browser() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (Debian's chromium package; make screenshots)")
    if not (HTML / "index.html").exists():
        pytest.skip("the docs are not built (make docs)")
    return found


def _run(browser: str, *arguments: str) -> str:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    command += [f"--window-size={WINDOW}", "--virtual-time-budget=5000", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout


@pytest.mark.parametrize("page", PAGES)
def test_a_main_page_fits_a_1280_px_window(page: str) -> None:
    browser = _browser()
    probed = HTML / f"_probe_{page}.html"
    probed.write_text(
        (HTML / f"{page}.html").read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
        encoding="utf-8",
    )
    try:
        dom = _run(browser, "--dump-dom", probed.as_uri())
    finally:
        probed.unlink()
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', dom, re.S)
    assert found is not None, dom[-500:]
    layout = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    scroll, width = layout["page"]
    assert scroll <= width, f"{page}: the page is {scroll} px wide in a {width} px window"
    assert layout["scrolling"] == [], f"{page}: code blocks scroll sideways"
    for src, natural, shown in layout["figures"]:
        assert natural > 0, f"{page}: {src} did not load"
        assert shown >= 0.95 * layout["column"], f"{page}: {src} shown {shown} px"
    SHOTS.mkdir(parents=True, exist_ok=True)
    _run(browser, f"--screenshot={SHOTS / f'{page}.png'}", (HTML / f"{page}.html").as_uri())
    assert (SHOTS / f"{page}.png").stat().st_size > 10_000

"""The built docs site (``make docs``, run before pytest by ``make test``) loads whole.

Every image, stylesheet and script a page references exists in the build, and every
page of docs/ was built: a reader never meets a broken picture or a missing page.
"""

from __future__ import annotations

import importlib.util
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
HTML = DOCS / "_build" / "html"


class _References(HTMLParser):
    """The local files a page loads: images, stylesheets, scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"img": "src", "script": "src", "link": "href", "source": "srcset"}
        values = dict(attrs)
        if tag == "link" and values.get("rel") not in ("stylesheet", "icon"):
            return
        value = values.get(wanted.get(tag, ""))
        if value:
            self.found.append(value.split()[0])


def _pages() -> list[Path]:
    if not (HTML / "index.html").exists():
        pytest.skip("the docs are not built: run `make docs` first (make test does)")
    return sorted(HTML.rglob("*.html"))


def test_every_page_of_docs_is_built() -> None:
    built = {page.relative_to(HTML).with_suffix("") for page in _pages()}
    sources = {page.relative_to(DOCS).with_suffix("") for page in DOCS.glob("*.rst")}
    assert sources - built == set()


def test_every_image_and_asset_a_page_loads_exists() -> None:
    missing = []
    for page in _pages():
        parser = _References()
        parser.feed(page.read_text(encoding="utf-8"))
        for reference in parser.found:
            url = urlsplit(reference)
            if url.scheme or url.netloc or not url.path:
                continue  # an external address: not part of the build
            if not (page.parent / unquote(url.path)).resolve().is_file():
                missing.append(f"{page.relative_to(HTML)}: {reference}")
    assert missing == []


def test_the_performance_charts_read_every_row_make_bench_printed() -> None:
    """docs/charts.py finds both merged-query tables in benchmarks/last_run.txt, all rows."""
    spec = importlib.util.spec_from_file_location("_docs_charts", DOCS / "charts.py")
    assert spec is not None and spec.loader is not None
    charts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(charts)
    text = charts.BENCH_OUTPUT.read_text(encoding="utf-8")
    tables = charts.bench_tables(text)
    for title in ("latest 100", "read all 10,000"):
        rows = tables[title]
        assert {r["variant"] for r in rows} >= {"single partition", *charts.VARIANTS}
        assert {r["shards"] for r in rows if r["variant"] == "merged"} == {1, 4, 16, 64}

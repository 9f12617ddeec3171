"""The built docs site (``make docs``, run before pytest by ``make test``) loads whole.

Every image, stylesheet and script a page references exists in the build, and every
page of docs/ was built: a reader never meets a broken picture or a missing page.

A missing build fails these checks: ``make test`` (and so CI) builds the docs first, so
a missing build there is a broken build step, not a reason to skip. A run that builds
no docs on purpose says so with ``SHARDMODEL_NO_DOCS_BUILD=1`` (``make unit`` does); only
then do the checks skip.
"""

from __future__ import annotations

import importlib.util
import os
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
HTML = DOCS / "_build" / "html"
#: Set to 1 by a run that builds no docs on purpose (``make unit``): the site checks skip.
NO_BUILD = "SHARDMODEL_NO_DOCS_BUILD"


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
    """Every page of the build; a missing build fails, unless the run says it built none."""
    if not (HTML / "index.html").exists():
        if os.environ.get(NO_BUILD) == "1":
            pytest.skip(f"the docs are not built, as {NO_BUILD}=1 says")
        pytest.fail(
            "the docs are not built: run `make docs` first (make test does), or set "
            f"{NO_BUILD}=1 in a run that builds no docs on purpose"
        )
    return sorted(HTML.rglob("*.html"))


def test_every_page_of_docs_is_built() -> None:
    """Every .rst page of docs/ has its HTML page in the build."""
    built = {page.relative_to(HTML).with_suffix("") for page in _pages()}
    sources = {page.relative_to(DOCS).with_suffix("") for page in DOCS.glob("*.rst")}
    assert sources - built == set()


def test_every_image_and_asset_a_page_loads_exists() -> None:
    """Every local image, stylesheet and script a built page loads is in the build."""
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


def _charts() -> Any:
    """docs/charts.py, loaded from its file (docs/ is no package)."""
    spec = importlib.util.spec_from_file_location("_docs_charts", DOCS / "charts.py")
    assert spec is not None and spec.loader is not None
    charts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(charts)
    return charts


def test_the_performance_charts_read_every_row_make_bench_printed() -> None:
    """docs/charts.py finds both merged-query tables in benchmarks/last_run.txt, all rows."""
    charts = _charts()
    text = charts.BENCH_OUTPUT.read_text(encoding="utf-8")
    tables = charts.bench_tables(text)
    for title in ("latest 100", "read all 10,000"):
        rows = tables[title]
        assert {r["variant"] for r in rows} >= {"single partition", *charts.VARIANTS}
        assert {r["shards"] for r in rows if r["variant"] == "merged"} == {1, 4, 16, 64}


def test_a_figure_whose_text_reads_below_the_body_text_is_refused(tmp_path: Path) -> None:
    """The docs' figures are drawn for the content column (736 px at a 1280 px window):
    text under 16 px there stops the build, naming the text."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charts = _charts()
    fig, axis = plt.subplots(figsize=(charts.WIDTH_IN, 3))
    axis.set_xticks([])
    axis.set_yticks([])
    axis.set_title("legible", fontsize=charts.TEXT_PT)
    charts._save(fig, tmp_path / "fine.png")
    axis.text(0.5, 0.5, "tiny", fontsize=8)
    with pytest.raises(ValueError, match=r"'tiny' at 8\.0 pt would read below the body text"):
        charts._save(fig, tmp_path / "small.png")
    plt.close(fig)
    assert (tmp_path / "fine.png").exists() and not (tmp_path / "small.png").exists()

"""Sphinx configuration: autodoc for the API, doctest so every example runs in CI."""

from __future__ import annotations

project = "shardmodel"
author = "The shardmodel developers"
copyright = "2026, The shardmodel developers"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.doctest"]
exclude_patterns = ["_build"]
html_theme = "furo"  # reads well on a laptop and a phone; in the dev and docs extras
html_title = "shardmodel"
autodoc_inherit_docstrings = False
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
nitpicky = False

# No hidden setup: every page's first block starts what it uses (an in-process DynamoDB
# from shardmodel.testing.mock_dynamodb), so its code runs as written in a script.

# The pictures are drawn at build time from the code they show (docs/charts.py), so they
# cannot drift from it; the doctest builder does not need them.
html_theme_options = {"navigation_with_keys": True}
html_static_path = ["_static"]
html_css_files = ["shardmodel.css"]  # code wraps in the column (no sideways overflow)


def _draw_charts(app: object) -> None:
    import logging
    import sys
    from pathlib import Path

    builder = getattr(app, "builder", None)
    if getattr(builder, "format", "") != "html":
        # The doctest build writes no pages: a picture the html build (perhaps running
        # beside it, as make test runs them) has not drawn yet is not its concern.
        app.config.suppress_warnings.append("image.not_readable")  # type: ignore[attr-defined]
        return
    docs = Path(__file__).resolve().parent
    sys.path.insert(0, str(docs))
    import charts

    logging.disable(logging.INFO)  # the libraries' info lines are not build output
    try:
        charts.build(docs / "_generated")
    finally:
        logging.disable(logging.NOTSET)


def setup(app: object) -> None:
    app.connect("builder-inited", _draw_charts)  # type: ignore[attr-defined]

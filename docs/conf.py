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

"""Sphinx configuration: autodoc for the API, doctest so every example runs in CI."""

from __future__ import annotations

project = "shardmodel"
author = "The shardmodel developers"
copyright = "2026, The shardmodel developers"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.doctest"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_inherit_docstrings = False
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
nitpicky = False

# Every page's examples run against in-process moto: started before, stopped after.
doctest_global_setup = """
from shardmodel.testing import mock_dynamodb as _mock_dynamodb
_moto = _mock_dynamodb()
_moto.__enter__()
"""
doctest_global_cleanup = """
_moto.__exit__(None, None, None)
"""

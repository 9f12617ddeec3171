"""The ``make mutants`` report reads mutmut's verdicts and the recorded reasons correctly."""

from __future__ import annotations

import pytest

from tests.mutation_report import (
    REASONS,
    kill_rate,
    module_of,
    parse_reasons,
    parse_results,
    tally,
)

RESULTS = """\
    shardmodel.query.xǁMergedQueryǁ__init____mutmut_1: killed
    shardmodel.query.xǁMergedQueryǁ__init____mutmut_2: survived
    shardmodel.query.x_first_page_size__mutmut_3: timeout
    shardmodel.migration.rules.x_key_in__mutmut_12: no tests
    shardmodel.migration.rules.x_key_in__mutmut_13: suspicious
    shardmodel.migration.rules.x_key_in__mutmut_14: not checked
    Some other line: printed by mutmut
"""


def test_module_names_come_from_mutant_names() -> None:
    """Functions (``x_``) and methods (``xǁClassǁ``) of dotted modules."""
    assert module_of("shardmodel.query.xǁMergedQueryǁ_page__mutmut_7") == "shardmodel.query"
    assert module_of("shardmodel.migration.rules.x_key_in__mutmut_1") == (
        "shardmodel.migration.rules"
    )
    with pytest.raises(ValueError, match="not a mutmut mutant name"):
        module_of("shardmodel.query")


def test_results_are_read_line_by_line() -> None:
    """Each ``name: status`` line of ``mutmut results``; other lines are ignored."""
    results = parse_results(RESULTS)
    assert len(results) == 6
    assert results["shardmodel.query.x_first_page_size__mutmut_3"] == "timeout"
    assert results["shardmodel.migration.rules.x_key_in__mutmut_12"] == "no tests"


def test_kill_rates_count_timeouts_as_caught() -> None:
    """Per module: killed and timed-out over those checked; other statuses are not killed."""
    modules = tally(parse_results(RESULTS))
    assert list(modules) == ["shardmodel.migration.rules", "shardmodel.query"]
    query, rules = modules["shardmodel.query"], modules["shardmodel.migration.rules"]
    assert (query.total, query.caught, kill_rate(query)) == (3, 2, pytest.approx(200 / 3))
    assert rules.counts["no tests"] == 1 and rules.counts["other"] == 1
    assert (rules.total, rules.checked, rules.counts["not checked"]) == (3, 2, 1)
    assert kill_rate(rules) == 0.0


def test_reasons_are_one_per_line_with_comments_allowed() -> None:
    """``name: reason`` lines; blank and ``#`` lines skipped; anything else is an error."""
    text = "# a comment\n\nshardmodel.keys.x_f__mutmut_1: equivalent: same order\n"
    assert parse_reasons(text) == {"shardmodel.keys.x_f__mutmut_1": "equivalent: same order"}
    with pytest.raises(ValueError, match="line 1"):
        parse_reasons("shardmodel.keys.x_f__mutmut_1 no colon\n")
    with pytest.raises(ValueError, match="line 2"):
        parse_reasons("\nnot-a-mutant: reason\n")


def test_the_kept_reasons_file_parses() -> None:
    """tests/mutants_surviving.txt is well formed."""
    parse_reasons(REASONS.read_text(encoding="utf-8"))

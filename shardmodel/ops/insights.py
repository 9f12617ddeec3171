"""Hot keys from CloudWatch Contributor Insights for DynamoDB, folded to logical keys.

With Contributor Insights enabled on a table, DynamoDB keeps CloudWatch rules that rank
its partition keys: ``DynamoDBContributorInsights-PKT-<table>-<created>`` the most
throttled, and (in the ``ACCESSED_AND_THROTTLED_KEYS`` mode) ``...-PKC-...`` the most
accessed. Their keys are physical (``tenant#3``); :func:`contributor_insights` reads both
rankings (``GetInsightRuleReport``) and folds each physical key to the logical key the
model's layout gives it, so one busy shard and the key it belongs to show together.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from attrs import frozen

from shardmodel.errors import ShardModelError

__all__ = ["Contributor", "ContributorInsights", "InsightRanking", "contributor_insights"]

Ranking = Literal["throttled", "accessed"]

#: The rule of each ranking: DynamoDB names its rules ``DynamoDBContributorInsights-<code>-``.
RULE_CODES: dict[Ranking, str] = {"throttled": "PKT", "accessed": "PKC"}
_RULE_PREFIX = "DynamoDBContributorInsights-"


@frozen
class Contributor:
    """One physical partition key a rule ranks, with the logical key it folds to.

    Attributes:
        key: the physical partition key (``"tenant#3"``).
        logical_key: the logical key (``"tenant"``), or None when the key does not
            follow the model's layout (written by hand, another model on the table) or
            holds many (a time series' bucket: its entities are in the sort key).
        value: the rule's aggregate for the key over the window (requests, or a sum).
    """

    key: str
    logical_key: str | None
    value: float


@frozen
class InsightRanking:
    """One rule's report: its busiest physical keys, and per logical key their totals.

    Attributes:
        ranking: ``"throttled"`` (the PKT rule) or ``"accessed"`` (PKC).
        rule: the CloudWatch rule's name.
        statistic: how the rule aggregates (``"Count"`` or ``"Sum"``).
        seconds: the window.
        contributors: its physical keys, the highest value first.
    """

    ranking: Ranking
    rule: str
    statistic: str
    seconds: float
    contributors: tuple[Contributor, ...]

    def folded(self) -> list[tuple[str | None, float, tuple[Contributor, ...]]]:
        """(logical key, total, its physical keys) for each logical key, the highest first.

        Totals cover the physical keys in the report only (its ``top`` contributors).
        """
        groups: dict[str | None, list[Contributor]] = {}
        for contributor in self.contributors:
            groups.setdefault(contributor.logical_key, []).append(contributor)
        rows = [(key, sum(c.value for c in found), tuple(found)) for key, found in groups.items()]
        return sorted(rows, key=lambda row: (-row[1], row[0] or ""))


@frozen
class ContributorInsights:
    """What Contributor Insights says about one table.

    Attributes:
        table: the table.
        status: ``ENABLED``, ``DISABLED``, ``ENABLING``... (DescribeContributorInsights).
        mode: ``ACCESSED_AND_THROTTLED_KEYS`` or ``THROTTLED_KEYS`` (None if not said).
        rankings: the throttled ranking first, then the accessed one (when the mode has it).
    """

    table: str
    status: str
    mode: str | None
    rankings: tuple[InsightRanking, ...] = ()

    @property
    def enabled(self) -> bool:
        """True when DynamoDB feeds the rules."""
        return self.status == "ENABLED"

    def render(self, top: int = 10) -> str:
        """The rankings folded to logical keys, or one line saying Contributor Insights is off."""
        from shardmodel.core.terminal import table

        if not self.enabled:
            return (
                f"contributor insights: {self.status.lower()} on {self.table} (enable it: aws "
                f"dynamodb update-contributor-insights --table-name {self.table} "
                "--contributor-insights-action ENABLE)"
            )
        lines = [f"contributor insights: {self.table} ({self.mode or 'mode not given'})"]
        for ranking in self.rankings:
            minutes = ranking.seconds / 60
            lines.append(
                f"most {ranking.ranking} partition keys, last {minutes:g} min "
                f"({ranking.rule}, {ranking.statistic}):"
            )
            rows = [
                [
                    "-" if logical is None else logical,
                    round(total, 2),
                    round(total / ranking.seconds, 2),
                    ", ".join(f"{c.key} ({c.value:,g})" for c in found[:3])
                    + (f" +{len(found) - 3}" if len(found) > 3 else ""),
                ]
                for logical, total, found in ranking.folded()[:top]
            ]
            if rows:
                head = ("logical key", ranking.statistic.lower(), "per second", "physical keys")
                lines.append(table(head, rows))
                if any(logical is None for logical, _, _ in ranking.folded()[:top]):
                    lines.append("(-: a key of no single logical key, or of another layout)")
            else:
                lines.append(f"(no {ranking.ranking} keys in the window)")
        if not self.rankings:
            lines.append("(no partition-key rules listed for the table)")
        return "\n".join(lines)


def contributor_insights(
    model: Any,
    minutes: int = 15,
    top: int = 10,
    dynamodb: Any = None,
    cloudwatch: Any = None,
    now: Callable[[], datetime] | None = None,
) -> ContributorInsights:
    """Read a table's Contributor Insights rankings of partition keys, folded to logical keys.

    Sends one DescribeContributorInsights, then one GetInsightRuleReport per partition-key
    rule listed (at most two); none when Contributor Insights is not enabled.

    Args:
        model: the model (its table, region and layout).
        minutes: the window, 1 to 1440.
        top: physical keys a rule reports, 1 to 100 (CloudWatch's bound).
        dynamodb: a boto3 DynamoDB client (default: one in the model's region).
        cloudwatch: a boto3 CloudWatch client (default: one in the model's region).
        now: the end of the window (default: the current time).

    Raises:
        ValueError: for ``minutes`` or ``top`` out of range, before any request.
    """
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 1440:
        raise ValueError(f"contributor_insights(minutes={minutes!r}): give an int from 1 to 1440")
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 100:
        raise ValueError(
            f"contributor_insights(top={top!r}): give an int from 1 to 100 (CloudWatch "
            "reports at most 100 contributors)"
        )
    table = model.Meta.table_name
    region = getattr(model.Meta, "region", None)
    if dynamodb is None or cloudwatch is None:
        import boto3

        dynamodb = dynamodb or boto3.client("dynamodb", region_name=region)
        cloudwatch = cloudwatch or boto3.client("cloudwatch", region_name=region)
    described = dynamodb.describe_contributor_insights(TableName=table)
    status = str(described.get("ContributorInsightsStatus", "DISABLED"))
    mode = described.get("ContributorInsightsMode")
    if status != "ENABLED":
        return ContributorInsights(table, status, mode)
    rules = [str(rule) for rule in described.get("ContributorInsightsRuleList", [])]
    until = (now or (lambda: datetime.now(timezone.utc)))()
    rankings = []
    for ranking, code in RULE_CODES.items():
        rule = next((r for r in rules if r.startswith(f"{_RULE_PREFIX}{code}-")), None)
        if rule is None:  # the THROTTLED_KEYS mode keeps no PKC rule
            continue
        report = cloudwatch.get_insight_rule_report(
            RuleName=rule,
            StartTime=until - timedelta(minutes=minutes),
            EndTime=until,
            Period=60,
            MaxContributorCount=top,
            OrderBy="Sum",
        )
        contributors = tuple(
            Contributor(key, _logical(model, key), float(found.get("ApproximateAggregateValue", 0)))
            for found in report.get("Contributors", [])
            for key in [str((found.get("Keys") or [""])[0])]
        )
        rankings.append(
            InsightRanking(
                ranking=ranking,
                rule=rule,
                statistic=str(report.get("AggregationStatistic") or "Count").capitalize(),
                seconds=minutes * 60.0,
                contributors=tuple(sorted(contributors, key=lambda c: (-c.value, c.key))),
            )
        )
    return ContributorInsights(table, status, mode, tuple(rankings))


def _logical(model: Any, physical: str) -> str | None:
    """The logical key ``physical`` folds to, or None if it is not the model's layout."""
    fold = getattr(model, "logical_key_of", None)
    if fold is None:
        return None
    try:
        return str(fold(physical))
    except ShardModelError:  # another layout, or a time series' bucket (of many entities)
        return None

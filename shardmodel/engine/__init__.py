"""The sharding engine under every model: its declaration, placements and plans.

:func:`sharding_of` gives a model class's :class:`Sharding`; a :class:`Placement`,
taken once per operation, answers every "where is this key" question.
"""

from shardmodel.engine.placement import Placement
from shardmodel.engine.sharding import Sharding, sharding_of
from shardmodel.engine.spec import ShardingSpec

__all__ = ["Placement", "Sharding", "ShardingSpec", "sharding_of"]

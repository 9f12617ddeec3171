"""Synthetic album titles with a realistic shape, for ordered-shard tests and benchmarks.

Titles are one to four words drawn from a Zipf-weighted vocabulary (a few words are very
common, most are rare), in mixed case with some accents, CJK and emoji; a few titles
repeat thousands of times, as "Greatest Hits" does in the MusicBrainz release dump.
Deterministic for a seed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

__all__ = ["COMMON_TITLES", "generate_titles"]

#: Titles that repeat far more than others (about 1 title in 60 is one of these).
COMMON_TITLES = ("Greatest Hits", "Live", "Untitled", "The Best Of", "Demo", "Christmas")

_SYLLABLES = [
    "ka", "lo", "mi", "ra", "su", "te", "vo", "an", "el", "is", "or", "un", "bre", "cha",
    "dre", "fla", "glo", "pra", "stri", "tho", "wi", "ze", "nu", "o", "lu",
]  # fmt: skip
#: Words with accents, other scripts and emoji: rarer than the plain ones, as in real data.
_FOREIGN = ["東京", "夜", "音楽", "사랑", "любовь", "🎵", "Ωmega", "Ärger", "Ça", "café", "señor"]
_FOREIGN += ["naïve", "Émile", "über", "fiancé", "Ǆungla", "ﬁn", "㎁"]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words = {"the", "of", "love", "night", "a", "in", "my", "blue", "song", "live"}
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    ordered = sorted(words) + _FOREIGN
    rng.shuffle(ordered)
    return ordered


def generate_titles(count: int, seed: int = 1) -> Iterator[str]:
    """``count`` titles, deterministic for ``seed``; every seed draws from one vocabulary."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(random.Random(0), 3000)
    weights = list(itertools.accumulate(1.0 / (rank + 5) for rank in range(len(vocabulary))))
    for _ in range(count):
        roll = rng.random()
        if roll < 1 / 60:
            yield COMMON_TITLES[int(rng.random() ** 2 * len(COMMON_TITLES))]
            continue
        words = rng.choices(vocabulary, cum_weights=weights, k=rng.randint(1, 4))
        style = rng.random()
        if style < 0.6:
            yield " ".join(w.capitalize() for w in words)
        elif style < 0.9:
            yield " ".join(words)
        else:
            yield " ".join(words).upper()

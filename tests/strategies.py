"""Hypothesis strategies for shardmodel's tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

from hypothesis import strategies as st

#: Logical keys: any non-empty text, separators included (they stay in the logical part).
logical_keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=60,
)

#: Time-series entities: any non-empty text without the sort key separator ``#``.
entity_keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00#"),
    min_size=1,
    max_size=60,
)

epoch_seconds = st.integers(min_value=0, max_value=4_102_444_800)  # 1970 .. 2100

aware_datetimes = st.builds(
    lambda naive, minutes: naive.replace(tzinfo=timezone(timedelta(minutes=minutes))),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 30)),
    st.integers(min_value=-12 * 60, max_value=14 * 60),
)

#: The first 17 significant digits, all a float holds: numbers sharing them and differing
#: further on look equal to a float but are distinct DynamoDB numbers (38 digits).
FLOAT_DIGITS = 17
DYNAMODB_DIGITS = 38


def close_number(prefix: int, tail: int, exponent: int, negative: bool) -> Decimal:
    """The number whose 38 significant digits are ``prefix`` (17) then ``tail`` (21)."""
    digits = prefix * 10 ** (DYNAMODB_DIGITS - FLOAT_DIGITS) + tail
    # built from text: Decimal arithmetic would round to the context's 28 digits
    return Decimal(f"{'-' if negative else ''}{digits}E{exponent}")


@st.composite
def close_numbers(
    draw: st.DrawFn,
    min_size: int = 0,
    max_size: int = 30,
    exponents: tuple[int, int] = (-167, 88),
) -> list[Decimal]:
    """Distinct numbers of up to 38 significant digits that agree in their first 17.

    Positive, negative or both; the exponent anywhere in DynamoDB's range by default
    (magnitudes 1E-130 to below 1E+126: the 38th digit of 1.xE-130 is at 1E-167).
    """
    prefix = draw(st.integers(10 ** (FLOAT_DIGITS - 1), 10**FLOAT_DIGITS - 1))
    exponent = draw(st.integers(*exponents))
    signs = draw(st.sampled_from(["positive", "negative", "both"]))
    # tails near one another too: consecutive values differ in the 38th digit only
    base = draw(st.integers(0, 10**21 - 1 - 10**4))
    tails = st.integers(0, 10**21 - 1) | st.integers(base, base + 10**4)
    pairs = draw(
        st.lists(
            st.tuples(tails, st.booleans() if signs == "both" else st.just(signs == "negative")),
            min_size=min_size,
            max_size=max_size,
            unique=True,
        )
    )
    return [close_number(prefix, tail, exponent, negative) for tail, negative in pairs]


def number_texts(value: Decimal) -> st.SearchStrategy[str]:
    """Texts of one number in the forms DynamoDB accepts and treats as equal.

    Plain (``12.5``), scientific (``1.25E+1``, ``1.25e1``), trailing zeros (``12.50``),
    and for a whole number its int text and ``<n>.0``.
    """
    plain = format(value, "f")
    forms = [plain, f"{value:E}", f"{value:e}".replace("e+", "e"), str(value)]
    forms.append(f"{plain}00" if "." in plain else f"{plain}.0")
    if value == value.to_integral_value():
        forms.append(str(int(value)))
    return st.sampled_from(forms)


#: A flag (``scan_index_forward``, ``consistent_read``) that is not a bool: strings,
#: numbers (0 and 1 among them, equal to False and True), bytes, containers.
non_bool_flags = st.one_of(
    st.sampled_from(["no", "yes", "False", "true", "", 0, 1, 0.0, 1.0, b"true", [], [True]]),
    st.text(max_size=6),
    st.integers(),
    st.floats(allow_nan=True),
)

#: A ``limit`` or ``page_size`` as callers pass them: ints of any sign, floats (whole or
#: not, NaN), numeric strings, bools, Decimals, or None.
paging_values = st.one_of(
    st.none(),
    st.integers(-3, 40),
    st.floats(-3, 40),
    st.just(float("nan")),
    st.integers(-3, 40).map(str),
    st.booleans(),
    st.decimals(-3, 40, allow_nan=False, places=1),
)

#: strftime codes glibc knows (with the padding flags), and text between them.
STRFTIME_PIECES = [
    *("%Y", "%y", "%G", "%g", "%C", "%m", "%b", "%B", "%h", "%d", "%e", "%j", "%U", "%W"),
    *("%V", "%u", "%w", "%a", "%A", "%H", "%k", "%I", "%l", "%p", "%M", "%S", "%f", "%T"),
    *("%R", "%X", "%x", "%D", "%F", "%z", "%Z", "%%", "%-m", "%-d", "%-H", "%-j"),
    *("-", "T", ":", " ", "/", "W", ".", "_"),
]

#: Any strftime format made of those pieces: TimeBuckets accepts it or refuses it.
strftime_formats = st.lists(st.sampled_from(STRFTIME_PIECES), min_size=1, max_size=9).map("".join)

#: Edits of a cursor's start key that make it no position of its query, as a forger with
#: the model's secret might: (kind, value); see tests/property/test_edges.py.
start_forgeries = st.one_of(
    st.tuples(st.just("partition"), st.text(min_size=1, max_size=12)),
    st.tuples(st.just("sort type"), st.sampled_from(["S", "B"])),
    st.tuples(st.just("no sort key"), st.none()),
    st.tuples(st.just("extra attribute"), st.text(min_size=1, max_size=8)),
    st.tuples(
        st.just("unstorable number"),
        st.one_of(
            st.integers(126, 2000).map(lambda e: f"1e{e}"),
            st.integers(131, 2000).map(lambda e: f"-1e-{e}"),
            # 39 or more significant digits (a trailing 0 would not count)
            st.integers(10**38, 10**45).filter(lambda n: n % 10 != 0).map(str),
        ),
    ),
    st.tuples(st.just("outside the range"), st.integers(-1000, 3)),
    st.tuples(st.just("conditions"), st.text("0123456789abcdef", min_size=1, max_size=16)),
)

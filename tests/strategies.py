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

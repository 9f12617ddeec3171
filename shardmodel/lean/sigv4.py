"""AWS Signature Version 4 for one JSON POST, with the day's signing key cached.

botocore's ``SigV4Auth.add_auth`` costs ~130-180 µs a request, mostly building and
walking its generic request model; the signature itself is a few HMACs. This signs the
only request shape the lean path sends (``POST /``, no query string, a handful of
headers) with the same algorithm, and derives the signing key once per secret, day,
region and service. Credentials come frozen from botocore's provider chain per request,
so refreshable credentials are refreshed exactly as botocore's signer would refresh them.
Tests check every signature against botocore's.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["Signer"]

_ALGORITHM = "AWS4-HMAC-SHA256"
#: a canonical header block's key: the request's headers and the session token
_BlockKey = tuple[tuple[tuple[str, str], ...], str | None]
#: Headers botocore never signs (it adds them after signing, or proxies rewrite them).
_UNSIGNED = frozenset({"expect", "transfer-encoding", "user-agent", "x-amzn-trace-id"})


try:  # hmac.digest's own fast path, without its wrapper
    from _hashlib import hmac_digest as _hmac_digest
except ImportError:  # pragma: no cover - a Python built without OpenSSL
    _hmac_digest = hmac.digest  # type: ignore[assignment]


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def _value(value: str) -> str:
    # SigV4's canonical header value: trimmed, inner runs of whitespace collapsed
    stripped = value.strip()
    if "  " in stripped or "\t" in stripped or "\n" in stripped:
        return " ".join(stripped.split())
    return stripped


class Signer:
    """Signs requests to one endpoint with credentials from ``credentials()``.

    Args:
        credentials: returns botocore's frozen credentials (``access_key``,
            ``secret_key``, ``token``) for this request, e.g. a botocore ``Credentials``
            object's ``get_frozen_credentials``.
        region: the signing region.
        service: the signing name (``dynamodb``).
        now: the clock (UTC), injectable for tests.
    """

    def __init__(
        self,
        credentials: Any,
        region: str,
        service: str = "dynamodb",
        now: Any = None,
    ) -> None:
        self._credentials = credentials
        self._region = region
        self._service = service
        self._now = now  # None: the system clock
        self._keys: dict[tuple[str, str], bytes] = {}
        self._lock = threading.Lock()
        self._last: tuple[Any, str] = (None, "")
        self._blocks: dict[_BlockKey, tuple[str, str, str]] = {}

    def _stamp(self) -> str:
        """The request time as SigV4 writes it, formatted once a second."""
        if self._now is None:
            second: Any = int(time.time())  # the system clock, read the cheap way
        else:
            second = self._now().replace(microsecond=0)
        cached = self._last
        if cached[0] != second:
            if self._now is None:
                text = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(second))
            else:
                text = second.strftime("%Y%m%dT%H%M%SZ")
            self._last = cached = (second, text)
        return cached[1]

    def _key(self, secret: str, day: str) -> bytes:
        found = self._keys.get((secret, day))
        if found is None:
            key = _hmac(("AWS4" + secret).encode("utf-8"), day)
            for part in (self._region, self._service, "aws4_request"):
                key = _hmac(key, part)
            with self._lock:
                if len(self._keys) > 8:  # old days and rotated secrets
                    self._keys.clear()
                self._keys[(secret, day)] = found = key
        return found

    @property
    def region(self) -> str:
        """The region requests are signed for."""
        return self._region

    @property
    def service(self) -> str:
        """The signing name requests are signed for."""
        return self._service

    def sign(self, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        """The headers to add to a ``POST /`` with ``headers`` (including ``host``).

        Returns ``x-amz-date``, ``x-amz-security-token`` (temporary credentials) and
        ``authorization`` (names in lower case, as HTTP/2 and SigV4 write them).
        """
        frozen = self._credentials()
        stamp = self._stamp()
        day = stamp[:8]
        token = frozen.token
        key = (tuple(headers.items()), token)
        block = self._blocks.get(key)
        if block is None:
            block = self._block(key, headers, token)
        before, after, signed_headers = block
        canonical = (
            f"POST\n/\n\n{before}x-amz-date:{stamp}\n{after}\n{signed_headers}\n"
            + hashlib.sha256(body).hexdigest()
        )
        scope = f"{day}/{self._region}/{self._service}/aws4_request"
        to_sign = (
            f"{_ALGORITHM}\n{stamp}\n{scope}\n"
            + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        )
        signature = _hmac_digest(
            self._key(frozen.secret_key, day), to_sign.encode("utf-8"), "sha256"
        ).hex()
        added = {"x-amz-date": stamp}
        if token:
            added["x-amz-security-token"] = token
        added["authorization"] = (
            f"{_ALGORITHM} Credential={frozen.access_key}/{scope}, "
            f"SignedHeaders={signed_headers}, Signature={signature}"
        )
        return added

    def _block(
        self, key: _BlockKey, headers: Mapping[str, str], token: str | None
    ) -> tuple[str, str, str]:
        """The canonical header lines before and after ``x-amz-date``, and their names.

        The same few headers go with every request of an operation: worked out once for
        each set of them (and session token), not once a request.
        """
        signed: dict[str, str] = {}
        for name, value in headers.items():
            lower = name.lower()
            if lower not in _UNSIGNED:
                signed[lower] = _value(value)
        signed.pop("x-amz-date", None)
        if token:
            signed["x-amz-security-token"] = token
        names = sorted([*signed, "x-amz-date"])
        cut = names.index("x-amz-date")
        before = "".join(f"{name}:{signed[name]}\n" for name in names[:cut])
        after = "".join(f"{name}:{signed[name]}\n" for name in names[cut + 1 :])
        block = (before, after, ";".join(names))
        with self._lock:
            if len(self._blocks) > 64:  # rotated tokens, changing extra headers
                self._blocks.clear()
            self._blocks[key] = block
        return block

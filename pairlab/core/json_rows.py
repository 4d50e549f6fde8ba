"""JSON text of many small records built from column arrays, for orjson fragments.

A large result (550,000 effects at 10,000 cohorts) costs more to turn into Python
dicts than to encode (issue 28); here each value is encoded once per column and the
records are spliced from those tokens and constant pieces, never built as objects.

The bytes are the ones ``orjson.dumps`` writes for the same dicts, compact, or with
``OPT_INDENT_2`` at the depth where the text is placed (``depth``: the nesting level
of the records themselves, 0 at the top) - the rules:

* a value is orjson's own spelling: :func:`tokens` encodes a whole NumPy array in one
  call (orjson spells a NumPy float64, int64 or bool as it spells the same Python
  value; NaN and +-inf are ``null``, as orjson writes a non-finite float); strings
  from a small vocabulary are encoded once each (:func:`vocabulary_tokens`);
* compact: no whitespace; pretty: every member on its own line, two spaces per level,
  ``": "`` after a key, a closing bracket on its own line at its container's level, and
  an empty array as ``[]``.

The text goes into a payload as :class:`orjson.Fragment` (written verbatim, so a
fragment meant for pretty output must be built with ``pretty=True`` at its depth).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

import numpy as np
import orjson

_INDENT: Final = b"  "
_NUMPY: Final = orjson.OPT_SERIALIZE_NUMPY


def tokens(values: np.ndarray) -> list[bytes]:
    """Each element of a bool, integer or float array (flattened, C order) as JSON, as
    orjson spells the element's Python value (``.tolist()``: a float32 as its double)."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if flat.dtype.kind == "f" and flat.dtype != np.float64:
        flat = flat.astype(np.float64)
    if flat.size == 0:
        return []
    return orjson.dumps(flat, option=_NUMPY)[1:-1].split(b",")


@dataclass(frozen=True)
class Coded:
    """A column of few distinct values: each row's ``words[codes[row]]`` (encoded JSON).
    :func:`object_groups` splices a run of coded columns as one piece per row."""

    words: list[bytes]
    codes: np.ndarray


def coded(words: Sequence[str | bool | None], codes: np.ndarray) -> Coded:
    """``words[i]`` as JSON for each ``i`` of ``codes`` (flattened; None is ``null``)."""
    return Coded(
        [orjson.dumps(word) for word in words], np.asarray(codes, dtype=np.intp).reshape(-1)
    )


def newline(depth: int, pretty: bool) -> bytes:
    """What precedes a member at ``depth``: nothing compact, else a line break and indent."""
    return b"\n" + _INDENT * depth if pretty else b""


def key(name: str, pretty: bool) -> bytes:
    """``"name":`` (pretty: ``"name": ``)."""
    return orjson.dumps(name) + (b": " if pretty else b":")


class _Spliced:
    """The constant and coded text between two token columns: a table of texts and each
    row's index in it (None: one text for every row)."""

    def __init__(self, text: bytes = b"") -> None:
        self.table = [text]
        self.codes: np.ndarray | None = None

    def add(self, text: bytes) -> None:
        self.table = [t + text for t in self.table]

    def add_coded(self, column: Coded) -> None:
        self.table = [t + w for t in self.table for w in column.words]
        width = len(column.words)
        self.codes = column.codes if self.codes is None else self.codes * width + column.codes

    def rows(self, n: int) -> list[bytes]:
        if self.codes is None:
            return self.table * n
        return np.asarray(self.table, dtype=object)[self.codes].tolist()  # type: ignore[no-any-return]


def object_groups(
    fields: Sequence[str],
    columns: Sequence[list[bytes] | Coded],
    counts: np.ndarray,
    *,
    depth: int,
    pretty: bool,
    names: Coded | None = None,
    open_: bytes = b"[",
    close: bytes | None = None,
    empty: bytes = b"[]",
) -> list[bytes]:
    """Records (a value per field and row in ``columns``: tokens, or :class:`Coded`) as
    JSON objects at ``depth``, grouped: the rows come in runs of ``counts[g]``, and each
    group is one text, its objects separated by commas between ``open_`` and ``close``
    (default: a JSON array one level up), or ``empty`` for a group without rows.
    ``names`` (one per row): each object is the member ``"name": {...}`` of an enclosing
    object instead. Runs of coded columns and the constant text around them are one
    piece per row, looked up by their combined code (fewer pieces to join)."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    bounds = np.concatenate([[0], np.cumsum(counts)])
    first_row = np.zeros(n, dtype=np.int64)
    first_row[bounds[:-1][counts > 0]] = 1
    last_row = np.zeros(n, dtype=np.int64)
    last_row[bounds[1:][counts > 0] - 1] = 1
    if close is None:
        close = newline(depth - 1, pretty) + b"]"
    item, inner = newline(depth, pretty), newline(depth + 1, pretty)

    segments: list[list[bytes]] = []
    spliced = _Spliced()
    spliced.add_coded(Coded([b"," + item, open_ + item], first_row))
    if names is not None:
        spliced.add_coded(names)
        spliced.add(b": " if pretty else b":")
    spliced.add(b"{")
    for i, (name, column) in enumerate(zip(fields, columns, strict=True)):
        spliced.add((b"," if i else b"") + inner + key(name, pretty))
        if isinstance(column, Coded):
            spliced.add_coded(column)
        else:
            segments += [spliced.rows(n), column]
            spliced = _Spliced()
    end = newline(depth, pretty) + b"}"
    spliced.add_coded(Coded([end, end + close], last_row))
    segments.append(spliced.rows(n))

    width = len(segments)
    pieces: list[bytes] = [b""] * (n * width)
    for i, segment in enumerate(segments):
        pieces[i::width] = segment
    cuts = (bounds * width).tolist()
    return [b"".join(pieces[a:b]) if b > a else empty for a, b in pairwise(cuts)]

"""Content-addressed memory of previewed files: ``sha256:<hex>`` -> the exact text.

``expand`` answers from here, so it returns the content the preview described
even if the file changed since. Kept in memory only (payload text never goes to
disk next to the ledger); bounded, oldest entries dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

DEFAULT_MAX_BYTES: Final = 256 * 1024 * 1024


class ContentStore:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._total = 0
        self.max_bytes = max_bytes

    def put(self, ref: str, text: str) -> None:
        if ref in self._texts:
            self._texts.move_to_end(ref)
            return
        size = len(text.encode("utf-8"))
        self._texts[ref] = text
        self._sizes[ref] = size
        self._total += size
        while self._total > self.max_bytes and len(self._texts) > 1:
            old, _ = self._texts.popitem(last=False)
            self._total -= self._sizes.pop(old)

    def get(self, ref: str) -> str | None:
        return self._texts.get(ref)

    def __len__(self) -> int:
        return len(self._texts)

"""Whether a run's next unit may start: the word every budget ceiling answers with.

``start`` it, ``wait`` until a running unit is recorded and ask again, or ``stop``
scheduling. With more than one ceiling (tokens, percent of a window) the more
restrictive answer wins (:func:`stricter`).
"""

from __future__ import annotations

from typing import Final, Literal

Admission = Literal["start", "wait", "stop"]
_ORDER: Final[dict[str, int]] = {"start": 0, "wait": 1, "stop": 2}


def stricter(a: Admission, b: Admission) -> Admission:
    """The more restrictive of two admissions (stop over wait over start)."""
    return a if _ORDER[a] >= _ORDER[b] else b


def strictness(a: Admission) -> int:
    return _ORDER[a]


__all__ = ["Admission", "stricter", "strictness"]

"""A sliding window of submitted units: at most ``width`` running at once, each result
handed to ``on_done`` as soon as its unit finishes (in completion order).

The flow's ThreadPoolTaskRunner returns :class:`PrefectConcurrentFuture` objects,
whose wrapped ``concurrent.futures.Future`` can be waited on with
``FIRST_COMPLETED``; Prefect's own ``wait`` cannot say which one finished first.
Whatever happens (a unit failed, the flow is cancelled), :func:`run_window` returns
or raises only after every submitted unit has finished, so nothing the window
started outlives it (the provider emulator is never stopped under an episode).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from prefect.futures import PrefectConcurrentFuture, PrefectFuture

U = TypeVar("U")


def run_window(
    units: Sequence[U],
    width: int,
    submit: Callable[[U], PrefectFuture[Any]],
    on_done: Callable[[U, Any], None],
    on_error: Callable[[U, BaseException], None] | None = None,
    on_start: Callable[[U], None] | None = None,
) -> None:
    """Submit ``units`` in order, keeping ``width`` running; call ``on_start(unit)`` before
    each submit and ``on_done(unit, result)`` per finished unit. A unit's exception goes
    to ``on_error`` and is then raised."""
    queue = list(units)
    running: dict[concurrent.futures.Future[Any], tuple[U, PrefectConcurrentFuture[Any]]] = {}
    try:
        while queue or running:
            while queue and len(running) < width:
                unit = queue.pop(0)
                if on_start is not None:
                    on_start(unit)
                fut = submit(unit)
                assert isinstance(fut, PrefectConcurrentFuture), type(fut)
                running[fut.wrapped_future] = (unit, fut)
            finished, _ = concurrent.futures.wait(
                list(running), return_when=concurrent.futures.FIRST_COMPLETED
            )
            for raw in finished:
                unit, fut = running.pop(raw)
                try:
                    result = fut.result()
                except Exception as exc:
                    if on_error is not None:
                        on_error(unit, exc)
                    raise
                on_done(unit, result)
    finally:
        concurrent.futures.wait(list(running))


__all__ = ["run_window"]

"""A sliding window of submitted units: at most ``width`` running at once, each result
handed to ``on_done`` as soon as its unit finishes (in completion order).

The flow's ThreadPoolTaskRunner returns :class:`PrefectConcurrentFuture` objects,
whose wrapped ``concurrent.futures.Future`` can be waited on with
``FIRST_COMPLETED``; Prefect's own ``wait`` cannot say which one finished first.
Whatever happens (a unit failed, the flow is cancelled), :func:`run_window` returns
or raises only after every submitted unit has finished, so nothing the window
started outlives it (the provider emulator is never stopped under an episode).

An ``admit`` callback (the budget ceiling, flows/evidence/budget_gate.py) is asked
before each unit starts, with the units running: ``start`` it, ``wait`` until a
running unit finishes and ask again, or ``stop``: nothing more starts, the running
units finish and are handed to ``on_done``, and the window returns.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from prefect.futures import PrefectConcurrentFuture, PrefectFuture

from pairlab.core.budget import Admission

U = TypeVar("U")


def run_window(
    units: Sequence[U],
    width: int,
    submit: Callable[[U], PrefectFuture[Any]],
    on_done: Callable[[U, Any], None],
    on_error: Callable[[U, BaseException], None] | None = None,
    on_start: Callable[[U], None] | None = None,
    admit: Callable[[U, list[U]], Admission] | None = None,
) -> None:
    """Submit ``units`` in order, keeping ``width`` running; call ``on_start(unit)`` before
    each submit and ``on_done(unit, result)`` per finished unit. A unit's exception goes
    to ``on_error`` and is then raised. ``admit(unit, running)`` (module docstring) may
    hold or stop the queue."""
    queue = list(units)
    running: dict[concurrent.futures.Future[Any], tuple[U, PrefectConcurrentFuture[Any]]] = {}
    try:
        while queue or running:
            while queue and len(running) < width:
                verdict = "start" if admit is None else admit(queue[0], _units(running))
                if verdict == "wait" and not running:  # nothing to wait for: never spin
                    verdict = "stop"
                if verdict == "stop":
                    queue.clear()
                if verdict != "start":
                    break
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


def _units(running: dict[Any, tuple[U, Any]]) -> list[U]:
    return [unit for unit, _ in running.values()]


__all__ = ["run_window"]

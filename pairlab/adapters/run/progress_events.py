"""The process-wide episode progress channel: the flows emit, the CLI listens.

The eval flow ``notify``-s a :class:`Progress` after each finished episode; the CLI,
which runs the flow in the same process, registers a listener (``add_listener``) that
draws its progress bar, and removes it afterwards. It is a channel, not a store: no I/O,
nothing kept beyond the registered listeners, and nothing here knows about Prefect or the
terminal. It sits in ``adapters`` because it is the one level both the flows and the CLI
may import.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Progress:
    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    started_monotonic: float = field(default_factory=time.monotonic)

    @property
    def remaining(self) -> int:
        return max(self.total - self.done - self.skipped, 0)

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        rate = (time.monotonic() - self.started_monotonic) / self.done
        return rate * self.remaining

    def percent(self) -> float:
        return 100.0 if self.total == 0 else 100.0 * (self.done + self.skipped) / self.total


Listener = Callable[[Progress], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def add_listener(listener: Listener) -> None:
    with _lock:
        _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def notify(progress: Progress) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(progress)

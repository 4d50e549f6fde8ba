"""Episode progress events (pairlab/adapters/run/progress_events.py): counts, percent, ETA, listeners."""

from __future__ import annotations

import threading

from pairlab.adapters.run import progress_events
from pairlab.adapters.run.progress_events import Progress


def test_fresh_run_counts_and_percent() -> None:
    p = Progress(total=8)
    assert (p.remaining, p.percent(), p.eta_s()) == (8, 0.0, None)  # no rate yet: unknown, not 0
    p.done, p.failed = 2, 1
    assert p.remaining == 6
    assert p.percent() == 25.0


def test_resumed_run_counts_skipped_as_progress_but_not_for_the_rate() -> None:
    p = Progress(total=10, skipped=4, started_monotonic=100.0)
    assert p.percent() == 40.0 and p.remaining == 6
    assert p.eta_s() is None  # skipped episodes say nothing about how long one takes
    p.done = 6
    assert p.percent() == 100.0 and p.remaining == 0
    assert p.eta_s() == 0.0


def test_eta_is_mean_episode_time_times_remaining() -> None:
    import time

    p = Progress(total=5, started_monotonic=time.monotonic() - 20.0)
    p.done = 2
    eta = p.eta_s()
    assert eta is not None and 29.9 <= eta <= 31.0  # ~10 s per episode x 3 remaining


def test_empty_plan_is_complete_and_never_negative() -> None:
    assert Progress(total=0).percent() == 100.0
    over = Progress(total=2, done=3)
    assert over.remaining == 0


def test_listeners_receive_every_notification_until_removed() -> None:
    seen: list[tuple[int, int]] = []

    def listener(p: Progress) -> None:
        seen.append((p.done, p.total))

    progress_events.add_listener(listener)
    try:
        p = Progress(total=3)
        for _ in range(3):
            p.done += 1
            progress_events.notify(p)
    finally:
        progress_events.remove_listener(listener)
    progress_events.notify(Progress(total=3, done=3))
    progress_events.remove_listener(listener)  # removing twice is harmless
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_notify_from_many_threads_reaches_each_listener() -> None:
    counts = {"a": 0, "b": 0}
    lock = threading.Lock()

    def make(name: str) -> progress_events.Listener:
        def listener(p: Progress) -> None:
            with lock:
                counts[name] += 1

        return listener

    a, b = make("a"), make("b")
    progress_events.add_listener(a)
    progress_events.add_listener(b)
    try:
        threads = [
            threading.Thread(
                target=lambda: [progress_events.notify(Progress(total=1)) for _ in range(50)]
            )
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        progress_events.remove_listener(a)
        progress_events.remove_listener(b)
    assert counts == {"a": 200, "b": 200}

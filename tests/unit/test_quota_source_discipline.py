"""Issue 16, item 1: a quota observation never states a window, a precision or a reset
that its source does not state. One test per gap found in the review of every source."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pairlab.adapters.quota import make_probe
from pairlab.adapters.usage import read_usage
from pairlab.adapters.usage.base import parse_instant
from pairlab.core.quota.consumption import interval_consumption


def _sim_file(tmp_path: Path, windows: dict[str, dict[str, object]]) -> Path:
    (tmp_path / "quota.json").write_text(
        json.dumps({"provider": "sim", "account": "a", "windows": windows}), encoding="utf-8"
    )
    return tmp_path


def _future(hours: int = 2) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_sim_window_without_its_length_is_not_named_after_its_key(tmp_path: Path) -> None:
    # Before: the key was taken as the window ("primary" even crashed the never-raising probe).
    account = _sim_file(
        tmp_path,
        {
            "primary": {"used_percent": 3, "resets_at": _future(), "reset_id": "p-1"},
            "five-hour": {"window_minutes": 300, "used_percent": 4, "resets_at": _future()},
        },
    )
    obs = make_probe("sim", account_dir=account).snapshot()
    assert sorted(o.window for o in obs) == ["five-hour", "other:0"]
    assert next(o for o in obs if o.window == "other:0").used_percent == 3.0


def test_sim_precision_is_the_stated_one_or_the_whole_number_format(tmp_path: Path) -> None:
    account = _sim_file(
        tmp_path,
        {
            "five-hour": {"window_minutes": 300, "used_percent": 4, "precision_percent": None},
            "seven-day": {"window_minutes": 10080, "used_percent": 2.5},
            "other": {"window_minutes": 60, "used_percent": 7, "precision_percent": 0.5},
            "whole": {"window_minutes": 1440, "used_percent": 7},
        },
    )
    got = {o.window: o.precision_percent for o in make_probe("sim", account_dir=account).snapshot()}
    # stated unknown stays unknown; a non-whole value breaks the whole-number format: unknown
    assert got == {"five-hour": None, "seven-day": None, "other:60": 0.5, "other:1440": 1.0}


def test_zone_less_reset_times_are_unknown_not_utc(tmp_path: Path) -> None:
    assert parse_instant("2026-03-01T15:00:00") is None
    assert parse_instant("2026-03-01T15:00:00Z") == datetime(2026, 3, 1, 15, tzinfo=UTC)
    assert parse_instant("2026-03-01T17:00:00+02:00") == datetime(2026, 3, 1, 15, tzinfo=UTC)
    assert parse_instant(1772380800) == datetime.fromtimestamp(1772380800, UTC)
    naive = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S")
    account = _sim_file(
        tmp_path, {"five-hour": {"window_minutes": 300, "used_percent": 4, "resets_at": naive}}
    )
    (obs,) = make_probe("sim", account_dir=account).snapshot()
    assert obs.resets_at is None
    # ... and so no consumption can be claimed across it
    (c,) = interval_consumption([obs], [obs], False)
    assert c.consumption_percent is None and c.reason == "quota-reset-crossing"


def _printer(tmp_path: Path, text: str) -> list[str]:
    saved = tmp_path / "out.txt"
    saved.write_text(text, encoding="utf-8")
    return [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(saved)!r}).read())"]


def test_statusline_and_header_resets_without_zone_are_unknown(tmp_path: Path) -> None:
    payload = {
        "rate_limits": {"five_hour": {"used_percentage": 5, "resets_at": "2026-04-03T00:00:00"}}
    }
    probe = make_probe(
        "command", argv=_printer(tmp_path, json.dumps(payload)), format="claude-statusline"
    )
    (obs,) = probe.snapshot()
    assert obs.used_percent == 5.0 and obs.resets_at is None
    dump = (
        "anthropic-ratelimit-unified-5h-utilization: 0.05\n"
        "anthropic-ratelimit-unified-5h-reset: 2026-04-03T00:00:00\n"
    )
    probe = make_probe("command", argv=_printer(tmp_path, dump), format="anthropic-headers")
    (obs,) = probe.snapshot()
    assert obs.used_percent == 5.0 and obs.resets_at is None


def _rollout(home: Path, lines: list[dict[str, object]]) -> None:
    day = home / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)
    path = day / "rollout-2026-03-01T10-00-00-abc.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")


def _token_count(ts: str, limits: dict[str, object]) -> dict[str, object]:
    return {
        "timestamp": ts,
        "type": "event_msg",
        "payload": {"type": "token_count", "info": None, "rate_limits": limits},
    }


def test_codex_limit_buckets_are_scoped_and_do_not_hide_the_account_windows(
    tmp_path: Path,
) -> None:
    account = {
        "limit_id": "codex",
        "primary": {"used_percent": 12.0, "window_minutes": 300, "resets_at": 1772380800},
        "secondary": {"used_percent": 31.0, "window_minutes": 10080, "resets_at": 1772900000},
    }
    other = {
        "limit_id": "codex_bengalfox",
        "primary": {"used_percent": 70.0, "window_minutes": 300, "resets_at": 1772380800},
        "secondary": None,
    }
    home = tmp_path / ".codex"
    _rollout(
        home,
        [
            _token_count("2026-03-01T10:00:01.000Z", account),
            _token_count("2026-03-01T10:00:02.000Z", other),  # the last line: another bucket
        ],
    )
    obs = {
        (o.provider, o.window): o for o in make_probe("codex-rollout", codex_home=home).snapshot()
    }
    assert obs[("codex", "five-hour")].used_percent == 12.0  # not the other bucket's 70
    assert obs[("codex", "seven-day")].used_percent == 31.0
    assert obs[("codex:codex_bengalfox", "five-hour")].used_percent == 70.0
    # the usage reader's quota observations are scoped the same way
    files = sorted(home.rglob("rollout-*.jsonl"))
    report = read_usage("codex", files)
    assert {o.provider for o in report.quota_observations} == {"codex", "codex:codex_bengalfox"}

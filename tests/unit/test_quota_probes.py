"""Quota probes that read files or run commands: sim, codex-rollout, command; continuity."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pairlab.adapters.quota import continuity_by_window, make_probe
from pairlab.core.errors import InvalidInputError
from pairlab.core.schemas.quota import Continuity

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "usage"


def _sim_quota(
    resets_5h: datetime, resets_7d: datetime, used: tuple[int, int]
) -> dict[str, object]:
    def w(minutes: int, pct: int, resets: datetime, rid: str) -> dict[str, object]:
        return {
            "window_minutes": minutes,
            "budget_tokens": 2_000_000,
            "used_tokens": pct * 20_000,
            "used_percent": pct,
            "resets_at": resets.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "reset_id": rid,
            "reset_count": int(rid.rsplit("-", 1)[1]),
        }

    return {
        "schema_version": 1,
        "provider": "sim",
        "account": "sim-account",
        "updated_at": "2026-01-01T00:00:00Z",
        "windows": {
            "five-hour": w(300, used[0], resets_5h, "five-hour-3"),
            "seven-day": w(10080, used[1], resets_7d, "seven-day-1"),
        },
    }


def test_sim_probe_reads_quota_json(tmp_path: Path) -> None:
    soon = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    week = (datetime.now(UTC) + timedelta(days=5)).replace(microsecond=0)
    (tmp_path / "quota.json").write_text(json.dumps(_sim_quota(soon, week, (17, 4))))
    obs = {o.window: o for o in make_probe("sim", account_dir=tmp_path).snapshot()}
    assert obs["five-hour"].used_percent == 17.0
    assert obs["five-hour"].precision_percent == 1.0
    assert obs["five-hour"].resets_at == soon
    assert obs["five-hour"].reset_id == "five-hour-3"
    assert obs["seven-day"].used_percent == 4.0
    assert obs["seven-day"].provider == "sim"
    assert obs["seven-day"].account == "sim-account"


def test_sim_probe_rolls_a_window_whose_reset_passed(tmp_path: Path) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=10)).replace(microsecond=0)
    week = (datetime.now(UTC) + timedelta(days=5)).replace(microsecond=0)
    (tmp_path / "quota.json").write_text(json.dumps(_sim_quota(past, week, (90, 40))))
    obs = {o.window: o for o in make_probe("sim", account_dir=tmp_path).snapshot()}
    assert obs["five-hour"].used_percent == 0.0
    assert obs["five-hour"].resets_at == past + timedelta(minutes=300)
    assert obs["five-hour"].reset_id == "five-hour-4"
    assert obs["seven-day"].used_percent == 40.0


def test_sim_probe_unavailable_is_explicit_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAIRLAB_SIM_ACCOUNT_DIR", raising=False)
    obs = make_probe("sim").snapshot()
    assert {o.window for o in obs} == {"five-hour", "seven-day"}
    assert all(o.used_percent is None and "unavailable:no-account-dir" in o.source for o in obs)
    monkeypatch.setenv("PAIRLAB_SIM_ACCOUNT_DIR", str(tmp_path))
    assert all("no-quota-file" in o.source for o in make_probe("sim").snapshot())
    (tmp_path / "quota.json").write_text("{not json")
    assert all(o.used_percent is None for o in make_probe("sim").snapshot())


def test_codex_rollout_probe_takes_latest_rate_limits_of_newest_rollout(tmp_path: Path) -> None:
    home = tmp_path / ".codex"
    shutil.copytree(FIX / "codex" / "per_model" / "sessions", home / "sessions")
    obs = {o.window: o for o in make_probe("codex-rollout", codex_home=home).snapshot()}
    assert obs["five-hour"].used_percent == 41.0
    assert obs["five-hour"].observed_at == datetime(2025, 9, 20, 8, 1, 4, tzinfo=UTC)
    assert obs["seven-day"].used_percent == 62.0


def test_codex_rollout_probe_without_rollouts_is_unknown(tmp_path: Path) -> None:
    obs = make_probe("codex-rollout", codex_home=tmp_path).snapshot()
    assert obs and all(o.used_percent is None and "no-rollout" in o.source for o in obs)
    home = tmp_path / "h"
    shutil.copytree(FIX / "codex" / "forked" / "sessions", home / "sessions")
    obs = make_probe("codex-rollout", codex_home=home).snapshot()
    assert all(o.used_percent is None and "no-rate-limits" in o.source for o in obs)


def _script(tmp_path: Path, payload: object, code: int = 0) -> list[str]:
    script = tmp_path / "probe.py"
    script.write_text(f"import json,sys\nprint(json.dumps({payload!r}))\nsys.exit({code})\n")
    return [sys.executable, str(script)]


def test_command_probe_parses_observations_and_fraction_scale(tmp_path: Path) -> None:
    payload = {
        "observations": [
            {
                "window": "five-hour",
                "used_percent": 0.25,
                "scale": "fraction",
                "resets_at": "2026-03-01T15:00:00Z",
                "reset_id": "r1",
                "precision_percent": 1.0,
            },
            {"window": "seven-day", "used_percent": 12, "observed_at": "2026-03-01T10:00:00Z"},
        ]
    }
    obs = make_probe("command", argv=_script(tmp_path, payload), provider="claude").snapshot()
    assert obs[0].used_percent == 25.0 and obs[0].source_scale == "fraction"
    assert obs[0].provider == "claude" and obs[0].source == "command"
    assert obs[1].observed_at == datetime(2026, 3, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("payload", "code", "reason"),
    [
        ({"observations": []}, 3, "exit-3"),
        ("not a list", 0, "malformed"),
        ([{"window": "weekly", "used_percent": 5}], 0, "malformed"),
        ([{"window": "five-hour", "used_percent": 150}], 0, "malformed"),
    ],
)
def test_command_probe_failures_are_unknown(
    tmp_path: Path, payload: object, code: int, reason: str
) -> None:
    obs = make_probe("command", argv=_script(tmp_path, payload, code)).snapshot()
    assert obs and all(o.used_percent is None and o.source.endswith(reason) for o in obs)


def test_command_probe_timeout_and_missing_binary(tmp_path: Path) -> None:
    slow = make_probe(
        "command", argv=[sys.executable, "-c", "import time; time.sleep(5)"], timeout_s=0.3
    )
    assert all("timeout" in o.source for o in slow.snapshot())
    missing = make_probe("command", argv=str(tmp_path / "nope"))
    assert all("not-runnable" in o.source for o in missing.snapshot())


def test_make_probe_rejects_unknown_names_and_options() -> None:
    with pytest.raises(InvalidInputError):
        make_probe("cursor")
    with pytest.raises(InvalidInputError):
        make_probe("sim", bogus=1)


def test_continuity_between_snapshots(tmp_path: Path) -> None:
    soon = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    week = (datetime.now(UTC) + timedelta(days=5)).replace(microsecond=0)
    probe = make_probe("sim", account_dir=tmp_path)
    (tmp_path / "quota.json").write_text(json.dumps(_sim_quota(soon, week, (10, 3))))
    first = probe.snapshot()
    assert set(continuity_by_window([], first).values()) == {Continuity.INITIAL}
    (tmp_path / "quota.json").write_text(json.dumps(_sim_quota(soon, week, (12, 3))))
    second = probe.snapshot()
    assert set(continuity_by_window(first, second).values()) == {Continuity.SAME_RESET}
    later = soon + timedelta(hours=5)
    (tmp_path / "quota.json").write_text(json.dumps(_sim_quota(later, week, (1, 2))))
    third = probe.snapshot()
    c = continuity_by_window(second, third)
    assert c[("sim", "five-hour")] == Continuity.RESET
    assert c[("sim", "seven-day")] == Continuity.UNKNOWN  # lower under the same reset
    gone = make_probe("sim", account_dir=tmp_path / "missing").snapshot()
    assert set(continuity_by_window(third, gone).values()) == {Continuity.UNKNOWN}


# -- Claude status-line JSON and Anthropic unified headers (CLIENTS.md, Quota sources) --


def _printer(tmp_path: Path, text: str) -> list[str]:
    """A command printing ``text`` verbatim (as `cat` of a saved payload would)."""
    saved = tmp_path / "saved.txt"
    saved.write_bytes(text.encode())
    return [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(saved)!r}).read())"]


def test_statusline_percent_scale_epoch_and_iso_resets(tmp_path: Path) -> None:
    payload = {
        "session_id": "s1",
        "model": {"id": "claude-sonnet-4-5"},
        "rate_limits": {
            "five_hour": {"used_percentage": 23.5, "resets_at": 1738425600},
            "seven_day": {"used_percentage": 41, "resets_at": "2026-04-03T00:00:00Z"},
            "seven_day_sonnet": {"used_percentage": 12, "resets_at": 1738857600},
        },
    }
    probe = make_probe(
        "command", argv=_printer(tmp_path, json.dumps(payload)), format="claude-statusline"
    )
    obs = {(o.provider, o.window): o for o in probe.snapshot()}
    assert set(obs) == {
        ("claude", "five-hour"),
        ("claude", "seven-day"),
        ("claude:sonnet", "seven-day"),
    }
    five = obs[("claude", "five-hour")]
    assert five.used_percent == 23.5 and five.precision_percent == pytest.approx(0.1)
    assert five.source_scale == "percent" and five.source == "claude-statusline"
    assert five.resets_at == datetime.fromtimestamp(1738425600, UTC)
    week = obs[("claude", "seven-day")]
    assert week.used_percent == 41.0 and week.precision_percent == 1.0
    assert week.resets_at == datetime(2026, 4, 3, tzinfo=UTC)


def test_statusline_without_rate_limits_is_unknown_not_zero(tmp_path: Path) -> None:
    # Some Claude Code versions leave rate_limits out of the payload altogether.
    payload = {"session_id": "s1", "cost": {"total_cost_usd": 0.42}}
    probe = make_probe(
        "command", argv=_printer(tmp_path, json.dumps(payload)), format="claude-statusline"
    )
    obs = probe.snapshot()
    assert [o.window for o in obs] == ["five-hour", "seven-day"]
    assert all(o.used_percent is None and o.provider == "claude" for o in obs)
    assert all(o.source.endswith("no-rate-limits") for o in obs)


def test_unified_headers_are_fractions_not_percents(tmp_path: Path) -> None:
    dump = (
        "HTTP/1.1 100 Continue\r\n\r\n"
        "HTTP/2 200\r\n"
        "date: Mon, 30 Nov 2026 03:00:00 GMT\r\n"
        "content-type: application/json\r\n"
        "Anthropic-Ratelimit-Unified-5h-Utilization: 0.5\r\n"
        "anthropic-ratelimit-unified-5h-reset: 1796014800\r\n"
        "anthropic-ratelimit-unified-5h-status: allowed\r\n"
        "anthropic-ratelimit-unified-7d-utilization: 0.0735\r\n"
        "anthropic-ratelimit-unified-7d-reset: 1796428800\r\n"
        "anthropic-ratelimit-unified-7d_sonnet-utilization: 1.5\r\n"
        "\r\n"
    )
    probe = make_probe("command", argv=_printer(tmp_path, dump), format="anthropic-headers")
    obs = {(o.provider, o.window): o for o in probe.snapshot()}
    five = obs[("claude", "five-hour")]
    assert five.used_percent == 50.0  # 0.5 is half the window, not 0.5 %
    assert five.source_scale == "fraction" and five.precision_percent == 1.0
    assert five.resets_at == datetime.fromtimestamp(1796014800, UTC)
    assert five.observed_at == datetime(2026, 11, 30, 3, tzinfo=UTC)  # the response's date
    week = obs[("claude", "seven-day")]
    assert week.used_percent == 7.35 and week.precision_percent == pytest.approx(0.01)
    sonnet = obs[("claude:sonnet", "seven-day")]
    assert sonnet.used_percent is None and sonnet.resets_at is None  # 1.5 is out of range


def test_header_date_without_zone_is_utc_and_garbage_date_falls_back(tmp_path: Path) -> None:
    dump = (
        "date: Mon, 30 Nov 2026 03:00:00 -0000\nanthropic-ratelimit-unified-5h-utilization: 0.1\n"
    )
    probe = make_probe("command", argv=_printer(tmp_path, dump), format="anthropic-headers")
    (obs,) = probe.snapshot()
    assert obs.observed_at == datetime(2026, 11, 30, 3, tzinfo=UTC) and obs.used_percent == 10.0
    garbage = "date: yesterday\nanthropic-ratelimit-unified-5h-utilization: 0.1\n"
    probe = make_probe("command", argv=_printer(tmp_path, garbage), format="anthropic-headers")
    (obs,) = probe.snapshot()
    assert obs.used_percent == 10.0 and obs.observed_at.tzinfo is not None


def test_headers_without_unified_limits_and_bad_format(tmp_path: Path) -> None:
    dump = "HTTP/2 200\nanthropic-ratelimit-tokens-remaining: 1000\n"
    probe = make_probe("command", argv=_printer(tmp_path, dump), format="anthropic-headers")
    obs = probe.snapshot()
    assert obs and all(o.used_percent is None for o in obs)
    assert all(o.source.endswith("no-unified-headers") for o in obs)
    with pytest.raises(InvalidInputError):
        make_probe("command", argv=["true"], format="statusline")

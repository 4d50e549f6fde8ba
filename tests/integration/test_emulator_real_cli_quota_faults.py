"""The quota model as the real CLIs and the quota probes surface it, and injected faults.

Quota: Claude Code under an OAuth-style token turns the unified rate-limit headers
into stream-json ``rate_limit_event`` lines; Codex writes the ``x-codex-*`` headers
into its rollout's ``rate_limits``; the ``claude-oauth-usage`` and
``codex-usage-endpoint`` probes read the emulator's usage endpoints. Each must give
the quota model's value at the real sources' precision (whole percent).

Faults: a 429, an overload and a cut stream in one episode; the CLI retries on its own,
the retries are in its records, and usage still equals the ground truth.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.clients.base import json_lines
from pairlab.adapters.emulator import Fault, ProviderEmulator
from pairlab.adapters.quota import make_probe
from pairlab.adapters.usage import read_usage
from pairlab.core.emulator.quota_model import AccountPlan, QuotaSnapshot, WindowSnapshot
from pairlab.core.emulator.quota_surfaces import whole_percent
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.quota import QuotaObservation
from tests.integration.realcli_harness import Cli, CliEpisode, run_cli_episode
from tests.integration.test_emulator_real_clis import assert_usage_matches_truth
from tests.support import CATALOG_DIR

pytestmark = pytest.mark.realcli

TASKS = {t.id: t for t in load_suite(CATALOG_DIR, "core").tasks}
# small limits, so one episode moves the whole-percent readings several times
SMALL = AccountPlan(five_hour_limit=120_000, seven_day_limit=1_500_000)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    accounts = {"claude-quota": SMALL, "codex-quota": SMALL}
    ledgers = tmp_path_factory.mktemp("ledgers")
    with ProviderEmulator(ledgers, catalog_dir=CATALOG_DIR, accounts=accounts) as emu:
        yield emu


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> LocalBackend:
    return LocalBackend(
        base_dir=tmp_path_factory.mktemp("episodes"),
        host_env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def _surfaced(window: WindowSnapshot) -> tuple[float, datetime | None]:
    reset = datetime.fromtimestamp(window.resets_at, tz=UTC) if window.resets_at else None
    return float(whole_percent(window)), reset


def _observed(obs: QuotaObservation) -> tuple[float | None, datetime | None]:
    return obs.used_percent, obs.resets_at


def _window(snapshot: QuotaSnapshot, name: str) -> WindowSnapshot:
    return snapshot.five_hour if name == "five-hour" else snapshot.seven_day


def test_claude_rate_limit_events_and_usage_endpoint_reproduce_the_quota_model(
    emulator: ProviderEmulator, backend: LocalBackend, tmp_path: Path
) -> None:
    episode = run_cli_episode(
        emulator,
        backend,
        "claude",
        TASKS["refactor-rename-total"],
        seed=3,
        oauth=True,
        account="claude-quota",
    )
    rows = [r for r in episode.rows() if r.billed]
    assert all(r.auth == "oauth" for r in rows)
    stdout = tmp_path / "stdout.jsonl"
    stdout.write_text(episode.outcome.stdout)
    observations = read_usage("claude", [stdout]).quota_observations
    events = [o for o in json_lines(episode.outcome.stdout) if o.get("type") == "rate_limit_event"]
    assert events and observations
    for window in ("five-hour", "seven-day"):
        seen = [_observed(o) for o in observations if o.window == window]
        before = [_surfaced(_window(r.quota_before, window)) for r in rows if r.quota_before]
        assert seen and all(s in before for s in seen), (window, seen, before)
        assert seen[-1] == before[-1]  # the last event carries the last response's headers
        assert all(o.precision_percent == 1.0 for o in observations if o.window == window)
    five = [pct for pct, _ in (_observed(o) for o in observations if o.window == "five-hour")]
    assert five == sorted(five) and five[-1] and five[-1] > five[0]  # the quota moved
    # the usage endpoint the claude-oauth-usage probe reads: the quota after the episode
    probe = make_probe(
        "claude-oauth-usage", url=episode.handle.usage_urls()["claude-oauth-usage"], token="t"
    )
    after = rows[-1].quota_after
    assert after is not None
    for obs in probe.snapshot():
        if obs.provider == "claude" and obs.window in ("five-hour", "seven-day"):
            assert _observed(obs) == _surfaced(_window(after, obs.window))
            assert obs.precision_percent == 1.0
    # the model: weighted billed usage, nothing else, on this fresh account
    weights = SMALL.weights_for("anthropic")
    assert after.five_hour.consumed == pytest.approx(
        sum(weights.weigh(r.usage) for r in rows if r.usage)
    )
    assert_usage_matches_truth(episode)


def test_codex_rollout_rate_limits_and_usage_endpoint_reproduce_the_quota_model(
    emulator: ProviderEmulator, backend: LocalBackend
) -> None:
    episode = run_cli_episode(
        emulator, backend, "codex", TASKS["refactor-rename-total"], seed=3, account="codex-quota"
    )
    rows = [r for r in episode.rows() if r.billed]
    last_before = rows[-1].quota_before
    assert last_before is not None
    rollout = make_probe("codex-rollout", codex_home=str(episode.home / ".codex")).snapshot()
    assert {o.window for o in rollout} == {"five-hour", "seven-day"}
    for obs in rollout:
        assert obs.used_percent is not None, rollout
        assert _observed(obs) == _surfaced(_window(last_before, obs.window))
    assert _window(last_before, "five-hour").utilization > 0.01  # the quota moved
    endpoint = make_probe(
        "codex-usage-endpoint", url=episode.handle.usage_urls()["codex-usage-endpoint"], token="t"
    ).snapshot()
    after = rows[-1].quota_after
    assert after is not None
    assert {_observed(o) for o in endpoint} == {
        _surfaced(after.five_hour),
        _surfaced(after.seven_day),
    }
    weights = SMALL.weights_for("openai")
    assert after.five_hour.consumed == pytest.approx(
        sum(weights.weigh(r.usage) for r in rows if r.usage)
    )
    assert_usage_matches_truth(episode)


def _retries_in_records(episode: CliEpisode) -> list[str]:
    """What each CLI wrote about the failed attempts it retried."""
    if episode.cli == "claude":
        errors = []
        for path in episode.record_files():
            errors += [
                str(o.get("error", {}).get("status") or o.get("error", {}).get("formatted"))
                for o in json_lines(path.read_text())
                if o.get("type") == "system" and o.get("subtype") == "api_error"
            ]
        return errors
    return [
        str(o.get("message"))
        for o in json_lines(episode.outcome.stdout)
        if o.get("type") == "error" and "Reconnecting" in str(o.get("message"))
    ]


@pytest.mark.parametrize("style", ["end", "drop"])
@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_faults_are_retried_by_the_cli_and_usage_still_equals_the_truth(
    emulator: ProviderEmulator, backend: LocalBackend, cli: Cli, style: str
) -> None:
    faults = [
        Fault(at_request=1, kind="rate-limit-429", retry_after_s=1),
        Fault(at_request=3, kind="overloaded-529"),
        Fault(at_request=5, kind="cut-stream", cut_style=style),  # type: ignore[arg-type]
    ]
    episode = run_cli_episode(
        emulator,
        backend,
        cli,
        TASKS["refactor-rename-total"],
        seed=3,
        faults=faults,
        account=f"faults-{cli}-{style}",
    )
    rows = episode.rows()
    by_index = {r.request_index: r for r in rows}
    assert by_index[1].status == 429 and not by_index[1].billed
    assert by_index[3].status in (529, 503) and not by_index[3].billed  # OpenAI's overload is 503
    cut = by_index[5]
    assert cut.fault == "cut-stream" and not cut.delivered
    # each faulted turn was asked again: the same step follows the fault
    for index in (1, 3, 5):
        assert by_index[index].turn == by_index[index + 1].turn, episode.describe()
    if cli == "claude" and style == "end":
        assert by_index[6].stream is False  # Claude Code's non-streaming fallback
    retries = _retries_in_records(episode)
    assert len(retries) >= 2, (retries, episode.describe())
    assert all(c.passed for c in episode.grade()), episode.describe()
    # a stream ended after Claude's message_start is billed for what that stated; a reset
    # before any event (drop) and an OpenAI stream cut before completion state nothing
    assert cut.billed is (cli == "claude" and style == "end")
    assert_usage_matches_truth(episode)

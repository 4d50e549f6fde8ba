"""The simulator's quota model as an instrument (issue 16): a per-arm quota factor, the
charge log (who used the account when), a reset forced mid-episode, unknown precision on
demand. Runs the real simclient as a subprocess; asserts against its own truth files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pairlab.adapters.quota import make_probe
from tests.unit.simclient_harness import SimLayout, run_sim


def _billed(truth: dict[str, Any]) -> int:
    v = truth["vector"]
    return sum(
        v[k] or 0
        for k in ("uncached_input", "cache_read", "cache_write_5m", "cache_write_1h", "output")
    )


def _charges(layout: SimLayout) -> list[dict[str, Any]]:
    lines = (layout.account / "charges.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_quota_factor_scales_one_arms_charge_and_every_charge_is_logged(tmp_path: Path) -> None:
    lay = SimLayout(tmp_path / "f").make()
    effects = json.dumps({"full": {"quota_factor": 0.25}})
    truths = []
    for arm in ("baseline", "full"):
        proc = run_sim(
            lay, "claude", arm=arm, episode_id=f"r:t:0:{arm}", PAIRLAB_SIM_EFFECTS=effects
        )
        assert proc.returncode == 0, proc.stderr
        truths.append(lay.truth())
    base, full = truths
    charges = _charges(lay)
    assert [c["seq"] for c in charges] == [1, 2]
    assert [c["episode_id"] for c in charges] == ["r:t:0:baseline", "r:t:0:full"]
    assert charges[0]["tokens"] == _billed(base) and charges[0]["quota_factor"] == 1.0
    # the charge is the billed tokens x 0.25 (rounded per call), tokens themselves unchanged
    assert abs(charges[1]["tokens"] - _billed(full) * 0.25) <= base["api_calls"] + full["api_calls"]
    five = full["quota"]["after"]["windows"]["five-hour"]
    assert five["used_tokens"] == charges[0]["tokens"] + charges[1]["tokens"]
    assert full["quota"]["charge"] == charges[1]
    state = json.loads((lay.account / "quota.json").read_text(encoding="utf-8"))
    assert state["charge_seq"] == 2 and five["precision_percent"] == 1


def test_forced_mid_episode_reset_crosses_a_reset_the_probe_sees(tmp_path: Path) -> None:
    lay = SimLayout(tmp_path / "r").make()
    # real clock (no PAIRLAB_SIM_NOW): the probe reads the account as of now
    run_sim(lay, "claude", episode_id="r:t:0:baseline", PAIRLAB_SIM_NOW="")
    before = {o.window: o for o in make_probe("sim", account_dir=lay.account).snapshot()}
    effects = json.dumps({"quota": {"mid_episode_reset": {"p": 1.0, "windows": ["five-hour"]}}})
    proc = run_sim(
        lay, "claude", episode_id="r:t:1:baseline", PAIRLAB_SIM_EFFECTS=effects, PAIRLAB_SIM_NOW=""
    )
    assert proc.returncode == 0, proc.stderr
    truth = lay.truth()
    assert truth["quota"]["charge"]["reset_windows"] == ["five-hour"]
    b5 = truth["quota"]["before"]["windows"]["five-hour"]
    a5 = truth["quota"]["after"]["windows"]["five-hour"]
    assert (b5["reset_id"], a5["reset_id"]) == ("five-hour-1", "five-hour-2")
    assert a5["resets_at"] > b5["resets_at"]  # a full window from the reset (ISO, same format)
    # only the calls after the reset remain in the new window; seven-day is untouched
    assert 0 < a5["used_tokens"] < truth["quota"]["charge"]["tokens"]
    b7 = truth["quota"]["before"]["windows"]["seven-day"]
    a7 = truth["quota"]["after"]["windows"]["seven-day"]
    assert a7["reset_id"] == b7["reset_id"] == "seven-day-1"
    assert a7["used_tokens"] == b7["used_tokens"] + truth["quota"]["charge"]["tokens"]
    after = {o.window: o for o in make_probe("sim", account_dir=lay.account).snapshot()}
    assert before["five-hour"].reset_id == "five-hour-1"
    assert after["five-hour"].reset_id == "five-hour-2"
    assert after["five-hour"].resets_at != before["five-hour"].resets_at
    assert after["seven-day"].reset_id == before["seven-day"].reset_id
    # the same episode seed without the override does not reset
    proc = run_sim(lay, "claude", episode_id="r:t:2:baseline", PAIRLAB_SIM_NOW="")
    assert lay.truth()["quota"]["charge"]["reset_windows"] == []


def test_unknown_precision_on_demand(tmp_path: Path) -> None:
    lay = SimLayout(tmp_path / "p").make()
    proc = run_sim(
        lay, "claude", PAIRLAB_SIM_EFFECTS=json.dumps({"quota": {"report_precision": False}})
    )
    assert proc.returncode == 0, proc.stderr
    state = json.loads((lay.account / "quota.json").read_text(encoding="utf-8"))
    assert all(w["precision_percent"] is None for w in state["windows"].values())
    obs = make_probe("sim", account_dir=lay.account).snapshot()
    assert obs and all(o.precision_percent is None and o.used_percent is not None for o in obs)


def test_bad_quota_configuration_is_refused(tmp_path: Path) -> None:
    lay = SimLayout(tmp_path / "b").make()
    for bad in (
        {"quota": {"mid_episode_reset": {"p": 2}}},
        {"quota": {"mid_episode_reset": {"p": 1, "windows": ["weekly"]}}},
        {"quota": {"report_precision": "no"}},
        {"full": {"quota_factor": -1}},
        # an arm beside other settings would be silently ignored: refused instead
        {"full": {"quota_factor": 0.5}, "quota": {"five_hour_budget_tokens": 1000}},
        {"quotas": {}},
    ):
        proc = run_sim(lay, "claude", PAIRLAB_SIM_EFFECTS=json.dumps(bad))
        assert proc.returncode == 2, (bad, proc.stderr)
    assert not (lay.account / "charges.jsonl").exists()


def test_charge_log_tells_own_use_from_anyone_elses(tmp_path: Path) -> None:
    from pairlab.adapters.quota.sim_account import assess_from_log, charge_mark, charges_between

    lay = SimLayout(tmp_path / "c").make()
    assert charge_mark(lay.account) == 0  # no account yet: nothing charged
    start = charge_mark(lay.account)
    run_sim(lay, "claude", episode_id="r:t:0:baseline")
    mid = charge_mark(lay.account)
    run_sim(lay, "claude", episode_id="other-run:t:0:full")  # someone else, meanwhile
    end = charge_mark(lay.account)
    assert (start, mid, end) == (0, 1, 2)
    own = {"r:t:0:baseline"}
    alone = assess_from_log(lay.account, start, mid, own)
    assert alone.unrelated is False and alone.basis == "simulator-charge-log"
    assert assess_from_log(lay.account, start, end, own).unrelated is True
    assert assess_from_log(lay.account, start, end, own | {"other-run:t:0:full"}).unrelated is False
    # a mark that could not be read, or a log missing a charge: unknown, never "nobody"
    assert assess_from_log(lay.account, None, end, own).unrelated is None
    assert charges_between(lay.account, 0, 3) is None
    (lay.account / "charges.jsonl").write_text("", encoding="utf-8")
    assert assess_from_log(lay.account, start, end, own).unrelated is None
    (lay.account / "quota.json").write_text("{torn", encoding="utf-8")
    assert charge_mark(lay.account) is None

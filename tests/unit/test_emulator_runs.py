"""What a run needs of the provider emulator: fault rules, pair seeds, the account's charge
log as the ground truth of concurrent use (over real HTTP), the run endpoint's wiring."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.emulator import EpisodeRegistration, ProviderEmulator
from pairlab.adapters.episode.io import assess_concurrent_use, concurrency_mark
from pairlab.adapters.profiles import load_named_profile
from pairlab.adapters.run.provider import DUMMY_CREDENTIALS, RUN_ACCOUNT, open_run_endpoint
from pairlab.core.emulator.run_settings import (
    EmulatorSettings,
    FaultRule,
    pair_seed,
    parse_fault_rule,
)
from pairlab.core.errors import InvalidInputError
from tests.emulator_support import claude_request
from tests.support import CATALOG_DIR


def test_fault_rules_parse_and_select() -> None:
    rule = parse_fault_rule("rate-limit-429@1:fix-median:optimizer")
    assert (rule.fault.kind, rule.fault.at_request) == ("rate-limit-429", 1)
    assert rule.selects("fix-median", "optimizer", 3)
    assert not rule.selects("fix-median", "baseline", 3)
    assert not rule.selects("refactor-rename-total", "optimizer", 3)
    anywhere = parse_fault_rule("cut-stream@2")
    assert anywhere.selects("x", "y", 0) and anywhere.fault.kind == "cut-stream"
    one_rep = parse_fault_rule("overloaded-529@0:*:*:2")
    assert one_rep.selects("t", "full", 2) and not one_rep.selects("t", "full", 1)
    settings = EmulatorSettings(faults=[rule, one_rep])
    assert [f.kind for f in settings.faults_for("fix-median", "optimizer", 2)] == [
        "rate-limit-429",
        "overloaded-529",
    ]


@pytest.mark.parametrize(
    "text",
    ["rate-limit-429", "429@x", "teapot-418@1", "cut-stream@1:a:b:c:d", "cut-stream@1:a:b:z"],
)
def test_a_bad_fault_rule_names_the_syntax(text: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_fault_rule(text)
    assert info.value.exit_code == 2
    assert "KIND@REQUEST" in info.value.message or "unknown kind" in info.value.message


def test_arms_of_a_pair_share_the_script_and_repetitions_differ() -> None:
    assert pair_seed(7, "fix-median", 0) == pair_seed(7, "fix-median", 0)
    seeds = {pair_seed(7, "fix-median", rep) for rep in range(20)}
    assert len(seeds) == 20 and all(0 <= s < 2**31 for s in seeds)
    assert pair_seed(8, "fix-median", 0) != pair_seed(7, "fix-median", 0)


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def _charge(emulator: ProviderEmulator, episode_id: str) -> None:
    handle = emulator.register_episode(
        EpisodeRegistration(task_id="fix-median", account=RUN_ACCOUNT, episode_id=episode_id)
    )
    body = json.dumps(claude_request("go")).encode()
    request = urllib.request.Request(
        f"{handle.base_url()}/v1/messages",
        data=body,
        headers={"content-type": "application/json", "x-api-key": "k"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
    handle.rows()  # wait for the ledger row (and the charge)


def test_the_charge_log_is_the_ground_truth_of_concurrent_use(tmp_path: Path) -> None:
    profile = load_named_profile("claude")
    with open_run_endpoint(
        profile, run_id="t", backend_name="local", ledger_dir=tmp_path, clean_orphans=False
    ) as endpoint:
        wired = endpoint.profile
        url = wired.quota.charge_log_url
        assert url == f"{endpoint.emulator.url}/admin/accounts/{RUN_ACCOUNT}/charges"
        assert concurrency_mark(wired, None) == 0
        _charge(endpoint.emulator, "run:a:0:baseline")
        start = concurrency_mark(wired, None)
        assert start == 1
        _charge(endpoint.emulator, "run:a:0:optimizer")
        mid = concurrency_mark(wired, None)
        alone = assess_concurrent_use(wired, None, (start, mid), {"run:a:0:optimizer"}, None)
        assert (alone.unrelated, alone.basis) == (False, "emulator-charge-log")
        _charge(endpoint.emulator, "run:b:0:baseline")  # another pair, meanwhile
        end = concurrency_mark(wired, None)
        shared = assess_concurrent_use(wired, None, (start, end), {"run:a:0:optimizer"}, True)
        assert (shared.unrelated, shared.basis) == (True, "emulator-charge-log")
        log = _get(f"{url}?after=1")
        assert log["mark"] == 3
        assert [c["episode_id"] for c in log["charges"]] == [
            "run:a:0:optimizer",
            "run:b:0:baseline",
        ]
        assert [c["seq"] for c in log["charges"]] == [2, 3]
        # a bracket the log cannot fill is unknown, never "nobody else"
        unknown = assess_concurrent_use(wired, None, (start, end + 5), {"x"}, None)
        assert unknown.unrelated is None


def test_the_run_endpoint_wires_quota_credentials_and_windows(tmp_path: Path) -> None:
    profile = load_named_profile("codex")
    host = {"PAIRLAB_EMULATOR_KEY": "a-real-key-of-the-host", "LANG": "C.UTF-8"}
    with open_run_endpoint(
        profile,
        run_id="t",
        backend_name="local",
        ledger_dir=tmp_path,
        host_env=host,
        clean_orphans=False,
    ) as endpoint:
        backend: Any = endpoint.backend
        # the host's credential never reaches the emulator: the dummy replaces it
        assert backend.host_env["PAIRLAB_EMULATOR_KEY"] == DUMMY_CREDENTIALS["PAIRLAB_EMULATOR_KEY"]
        options = endpoint.profile.quota.options
        assert options["url"] == f"{endpoint.emulator.url}/a/{RUN_ACCOUNT}/backend-api/wham/usage"
        usage = _get(options["url"])
        primary = usage["rate_limit"]["primary_window"]
        assert primary["reset_at"] is not None  # an account in use: its windows run
        first = endpoint.register(
            episode_id="t:fix-median:0:optimizer",
            task_id="fix-median",
            arm="optimizer",
            repetition=0,
            seed=pair_seed(0, "fix-median", 0),
        )
        again = endpoint.register(
            episode_id="t:fix-median:0:optimizer",
            task_id="fix-median",
            arm="optimizer",
            repetition=0,
            seed=pair_seed(0, "fix-median", 0),
        )
        assert first.handle.token != again.handle.token  # a retried attempt: its own ledger
        assert first.url == f"{endpoint.emulator.url}/e/{first.handle.token}"
    assert CATALOG_DIR.is_dir()


def test_registrations_carry_the_faults_their_rules_select(tmp_path: Path) -> None:
    settings = EmulatorSettings(
        faults=[
            FaultRule.model_validate(
                {"fault": {"kind": "rate-limit-429", "at_request": 1}, "arm": "full"}
            )
        ]
    )
    with open_run_endpoint(
        load_named_profile("claude"),
        run_id="t",
        backend_name="local",
        ledger_dir=tmp_path,
        settings=settings,
        clean_orphans=False,
    ) as endpoint:
        faulty = endpoint.register(
            episode_id="e1", task_id="fix-median", arm="full", repetition=0, seed=1
        )
        clean = endpoint.register(
            episode_id="e2", task_id="fix-median", arm="baseline", repetition=0, seed=1
        )
        heads = [
            json.loads(p.read_text().splitlines()[0])
            for p in (faulty.ledger_path, clean.ledger_path)
        ]
    assert [len(h["registration"]["faults"]) for h in heads] == [1, 0]
    assert heads[0]["registration"]["account"] == RUN_ACCOUNT

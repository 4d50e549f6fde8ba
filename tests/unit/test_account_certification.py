"""An account's certification (pairlab.core.account_certification): the record certify
writes, when it is stale and why, and the words the approver and the report show."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from pairlab.core.account_certification import (
    AccountCertification,
    ca_bundle_sha256,
    report_sha256,
)
from pairlab.core.accounts import Account, AccountStamp, CredentialKind

WHEN = datetime(2026, 12, 5, 6, 30, tzinfo=UTC)


def _certification(**changes: object) -> AccountCertification:
    fields: dict[str, object] = {
        "passed": True,
        "level": "live-local",
        "provider_url": "https://api.anthropic.com",
        "client": "claude",
        "kind": CredentialKind.SUBSCRIPTION_TOKEN,
        "cli_version": "2.1.332",
        "profile": "claude",
        "backend": "local",
        "intervention": "reference 1.0.0",
        "certified_at": WHEN,
        "report_sha256": "a" * 64,
    }
    return AccountCertification(**{**fields, **changes})  # type: ignore[arg-type]


def _account(url: str | None = None, **changes: object) -> Account:
    fields: dict[str, object] = {
        "name": "own",
        "client": "claude",
        "kind": CredentialKind.SUBSCRIPTION_TOKEN,
        "provider_url": url,
        "stored_in": "file:x",
        "added_at": WHEN,
    }
    return Account(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_certification_that_still_matches_is_certified() -> None:
    status = _account(certification=_certification()).certification_status("2.1.332")
    assert status.state == "certified" and not status.stale and not status.unchecked
    assert status.short() == "certified live-local (stand-in) 2026-12-05"
    assert status.line() == (
        "certified live-local against the stand-in on 2026-12-05 06:30 UTC "
        "(claude 2.1.332, profile claude, local; report aaaaaaaaaaaa)"
    )


def test_a_changed_provider_url_makes_it_stale_and_says_both_urls() -> None:
    moved = _account("https://user:pw@gw.example/anthropic?key=v", certification=_certification())
    status = moved.certification_status("2.1.332")
    assert status.state == "stale"
    assert [r.code for r in status.stale] == ["provider-url-changed"]
    assert "certified for https://api.anthropic.com, now https://gw.example/anthropic" in (
        status.line()
    )
    assert "pw" not in status.line() and "key=v" not in status.line()
    assert status.short() == "STALE (provider-url-changed)"


def test_another_cli_version_makes_it_stale() -> None:
    status = _account(certification=_certification()).certification_status("2.1.400")
    assert status.state == "stale" and [r.code for r in status.stale] == ["cli-version-changed"]
    assert "the claude CLI is now 2.1.400 (certified with 2.1.332)" in status.line()


def test_another_kind_or_client_makes_it_stale() -> None:
    keyed = _account(kind=CredentialKind.API_KEY, certification=_certification())
    assert [r.code for r in keyed.certification_status("2.1.332").stale] == ["kind-changed"]
    codex = _account(
        client="codex", kind=CredentialKind.SUBSCRIPTION_TOKEN, certification=_certification()
    )
    codes = [r.code for r in codex.certification_status("0.163.0").stale]
    # the provider URL (codex's own default) and the client changed; a codex version is
    # never compared with a claude one
    assert codes == ["provider-url-changed", "client-changed"]


def test_an_unreadable_cli_version_is_not_compared_nor_taken_as_the_same() -> None:
    status = _account(certification=_certification()).certification_status(None)
    assert status.state == "certified"
    assert status.unchecked == ["the claude CLI's version (not readable here)"]
    assert "not compared here: the claude CLI's version (not readable here)" in status.line()


def test_failed_and_absent_certifications() -> None:
    failed = _certification(passed=False, failed_checks=["cli", "account-credential"])
    status = _account(certification=failed).certification_status("2.1.332")
    assert status.state == "failed" and status.short() == "certify FAILED 2026-12-05"
    assert status.line().endswith("failed checks: cli, account-credential")
    none = _account().certification_status("2.1.332")
    assert none.state == "not-certified" and none.certification is None
    assert none.short() == "not certified" and none.fact() == "NOT CERTIFIED"


def test_the_report_hash_is_its_canonical_json() -> None:
    one = report_sha256({"passed": True, "profiles": [{"b": 1, "a": "é"}]})
    assert one == report_sha256({"profiles": [{"a": "é", "b": 1}], "passed": True})
    assert one != report_sha256({"passed": False, "profiles": [{"b": 1, "a": "é"}]})
    with pytest.raises(ValueError):
        _certification(report_sha256="not-a-hash")


def test_the_run_stamp_and_report_fact_carry_the_certification() -> None:
    account = _account("https://gw.example/a", certification=_certification())
    stamp = AccountStamp.of(account, account.certification_status("2.1.332"))
    assert stamp.fact().endswith(
        "; certification STALE (provider-url-changed; certified live-local against the "
        "stand-in 2026-12-05))"
    )
    held = AccountStamp.of(_account(certification=_certification()))
    assert "certif" not in held.fact()  # a run recorded before certifications: nothing said
    stored = json.loads(json.dumps(stamp.model_dump(mode="json")))  # run.json, read back
    again = AccountStamp.model_validate(stored, strict=False)
    assert again == stamp and again.fact() == stamp.fact()
    plain = AccountStamp.of(_account(), _account().certification_status(None))
    assert plain.fact().endswith("usage endpoint; NOT CERTIFIED)")


def test_an_old_record_without_a_certification_still_reads() -> None:
    old = _account().model_dump(mode="json")
    del old["certification"]
    assert Account.model_validate(old, strict=False).certification is None


def test_the_canary_approval_says_the_accounts_certification() -> None:
    from flows.canary.approval import approval_description, approval_record
    from flows.canary.manifest import canary_profile, freeze_manifest
    from flows.params import CanaryTrialParams
    from pairlab.adapters.episode.io import load_eval_inputs
    from pairlab.core.schedule import plan_canary

    params = CanaryTrialParams()
    suite, profile = load_eval_inputs(params.suite, params.profile)
    schedule = plan_canary(params.task_filter, params.repetitions, params.seed, "t", params.strata)
    manifest = freeze_manifest.fn(params, "t", suite, canary_profile(profile), schedule)
    manifest = manifest.model_copy(
        update={"environment": {**manifest.environment, "account": "own"}}
    )
    stale = _account("https://gw.example/a", certification=_certification())
    status = stale.certification_status("2.1.332")
    text = approval_description(manifest, certification=status)
    assert "Account `own`: **STALE: certified live-local against the stand-in" in text
    assert "the provider URL changed (certified for https://api.anthropic.com" in text
    held = _account(certification=_certification()).certification_status("2.1.332")
    assert "Account `own`: certified live-local against the stand-in" in (
        approval_description(manifest, certification=held)
    )
    none = _account().certification_status("2.1.332")
    assert "Account `own`: **not certified" in approval_description(manifest, certification=none)
    assert "Account" not in approval_description(manifest)  # no account: nothing said
    # what the approver was shown is recorded with the decision
    recorded = approval_record("rejected", None, params, WHEN, status)
    assert recorded["account_certification"]["state"] == "stale"
    assert recorded["account_certification"]["stale"][0]["code"] == "provider-url-changed"
    assert approval_record("rejected", None, params, WHEN)["account_certification"] is None


def test_a_changed_private_ca_bundle_makes_it_stale() -> None:
    bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    other = bundle.replace("MIIB", "MIIC")
    with_ca = _certification(ca_bundle_sha256=ca_bundle_sha256(bundle))
    held = _account(certification=with_ca, ca_bundle=bundle).certification_status("2.1.332")
    assert held.state == "certified", held.line()
    for now, words in ((other, "is another one"), (None, "was removed since")):
        status = _account(certification=with_ca, ca_bundle=now).certification_status("2.1.332")
        assert [r.code for r in status.stale] == ["ca-bundle-changed"]
        assert words in status.line()
    added = _account(certification=_certification(), ca_bundle=bundle)
    status = added.certification_status("2.1.332")
    assert status.short() == "STALE (ca-bundle-changed)"
    assert "was added since" in status.line() and "MII" not in status.line()

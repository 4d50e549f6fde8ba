"""An account's certification recorded on its record, through both stores and the real
CLI: the local mode-600 file and a real Prefect server's Secret block. The certification
round-trips beside the credential (never in it, the credential untouched), ``account
list``/``check`` show it, and it goes stale, with why, when the account's provider URL
or the CLI's version is no longer the certified one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.accounts.certification import cli_version_here
from pairlab.core.account_certification import AccountCertification
from pairlab.core.accounts import AccountStore, CredentialKind
from tests.standin_support import local_accounts_env
from tests.support import pairlab_argv

PLANTED = "sk-ant-oat01-PLANTED-certification-5b9e"


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        pairlab_argv(*args), env=env, capture_output=True, text=True, check=False, timeout=180
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    assert PLANTED not in proc.stdout + proc.stderr
    return proc


def _listed(env: dict[str, str]) -> dict[str, Any]:
    listed = _run(env, "account", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {a["name"]: a["certification"] for a in json.loads(listed.stdout)["accounts"]}


def _certification(**changes: object) -> AccountCertification:
    fields: dict[str, object] = {
        "passed": True,
        "level": "live-local",
        "provider_url": "https://api.anthropic.com",
        "client": "claude",
        "kind": CredentialKind.SUBSCRIPTION_TOKEN,
        "cli_version": cli_version_here("claude"),
        "profile": "claude",
        "backend": "local",
        "intervention": "reference 1.0.0",
        "certified_at": datetime.now(UTC).replace(microsecond=0),
        "report_sha256": "0123456789abcdef" * 4,
    }
    return AccountCertification(**{**fields, **changes})  # type: ignore[arg-type]


def _exercise(
    env: dict[str, str],
    store: Callable[[], AbstractContextManager[AccountStore]],
    stored_payload: Callable[[], dict[str, Any]],
) -> None:
    # a test session's one Prefect server keeps the Secret blocks an earlier test registered
    # (an 'own' with its certification): this test starts from none (unknown: exit 2, fine)
    _run(env, "account", "remove", "own")
    added = _run(env, "account", "add", "own", "--client", "claude", "--from-env", "PLANTED_TOKEN")
    assert added.returncode == 0, added.stderr
    assert _listed(env)["own"]["state"] == "not-certified"

    cert = _certification()
    with store() as accounts:
        updated = accounts.set_certification("own", cert)
        assert updated.certification == cert
        # the round trip: what the store reads back is what was recorded, the credential
        # beside it untouched
        assert accounts.record("own").certification == cert
        assert accounts.credential("own") == PLANTED
    payload = stored_payload()
    assert payload["credential"] == PLANTED
    assert payload["account"]["certification"]["report_sha256"] == cert.report_sha256
    assert PLANTED not in json.dumps(payload["account"])  # never in the record

    shown = _listed(env)["own"]
    assert shown["state"] == "certified" and shown["stale"] == []
    assert shown["certification"] == cert.model_dump(mode="json")
    if cert.cli_version is None:  # no bundled claude here: the version is not compared
        assert shown["unchecked"] == ["the claude CLI's version (not readable here)"]
    text = _run(env, "account", "list")
    assert "certified live-local (stand-in)" in text.stdout
    assert "certification: certified live-local against the stand-in on" in text.stdout
    checked = _run(env, "account", "check", "own", "--json")
    assert json.loads(checked.stdout)["account"]["certification"]["state"] == "certified"

    # another CLI version than the certified one: stale, saying both
    if cert.cli_version is not None:
        with store() as accounts:
            accounts.set_certification("own", _certification(cli_version="0.0.1"))
        old = _listed(env)["own"]
        assert old["state"] == "stale"
        assert [r["code"] for r in old["stale"]] == ["cli-version-changed"]
        assert f"now {cert.cli_version} (certified with 0.0.1)" in old["line"]
        with store() as accounts:
            accounts.set_certification("own", cert)

    # re-registered at another provider URL: the certification is kept, and stale
    moved = _run(
        env, "account", "add", "own", "--client", "claude", "--from-env", "PLANTED_TOKEN",
        "--replace", "--provider-url", "https://gw.example/anthropic",
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    assert "certification kept: STALE" in moved.stdout
    stale = _listed(env)["own"]
    assert stale["state"] == "stale" and stale["certification"] == cert.model_dump(mode="json")
    assert [r["code"] for r in stale["stale"]] == ["provider-url-changed"]
    assert (
        "certified for https://api.anthropic.com, now https://gw.example/anthropic"
        in (stale["line"])
    )
    assert "STALE (provider-url-changed)" in _run(env, "account", "list").stdout
    check = _run(env, "account", "check", "own")
    assert "certification: STALE: certified live-local" in check.stdout

    assert _run(env, "account", "remove", "own").returncode == 0


def test_certification_round_trips_through_the_local_file(tmp_path: Path) -> None:
    from pairlab.adapters.accounts.local_file import LocalFileAccountStore

    env = local_accounts_env(tmp_path, PLANTED_TOKEN=PLANTED)
    path = Path(env["PAIRLAB_ACCOUNTS_FILE"])

    def store() -> AbstractContextManager[AccountStore]:
        return nullcontext(LocalFileAccountStore(path))

    def payload() -> dict[str, Any]:
        assert path.stat().st_mode & 0o077 == 0  # still mode 600 after the update
        entry: dict[str, Any] = json.loads(path.read_text())["accounts"]["own"]
        return entry

    _exercise(env, store, payload)


@pytest.mark.prefect
def test_certification_round_trips_through_a_prefect_secret_block(
    prefect_server: Any, tmp_path: Path
) -> None:
    from contextlib import contextmanager

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from pairlab.adapters.accounts.prefect_secret import BLOCK_PREFIX, PrefectSecretAccountStore

    env = dict(prefect_server.env)
    env["PAIRLAB_ACCOUNTS_FILE"] = str(tmp_path / "never" / "accounts.json")
    env["PLANTED_TOKEN"] = PLANTED

    @contextmanager
    def store() -> Iterator[AccountStore]:
        with temporary_settings({PREFECT_API_URL: prefect_server.api_url}):
            yield PrefectSecretAccountStore(prefect_server.api_url)

    def payload() -> dict[str, Any]:
        with (
            temporary_settings({PREFECT_API_URL: prefect_server.api_url}),
            get_client(sync_client=True) as client,
        ):
            hidden = client.read_block_document_by_name(
                BLOCK_PREFIX + "own", block_type_slug="secret", include_secrets=False
            )
            shown = client.read_block_document_by_name(
                BLOCK_PREFIX + "own", block_type_slug="secret", include_secrets=True
            )
        assert PLANTED not in json.dumps(hidden.data, default=str)  # still obfuscated
        value = shown.data["value"]
        doc: dict[str, Any] = json.loads(value) if isinstance(value, str) else value
        return doc

    _exercise(env, store, payload)
    assert not (tmp_path / "never").exists()  # nothing fell back to the local file

"""`pairlab account add|list|check|remove` against both stores, through the real CLI.

The local file (mode 600 checked, a widened file refused) and a real Prefect server
(Secret blocks). No output ever contains the credential.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import pairlab_argv

PLANTED = "sk-ant-oat01-PLANTED-accounts-test-7c1f"
AUTH_JSON = {"OPENAI_API_KEY": None, "tokens": {"access_token": "PLANTED-access-9d2e"}}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        pairlab_argv(*args), env=env, capture_output=True, text=True, check=False, timeout=180
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    assert PLANTED not in proc.stdout + proc.stderr
    assert "PLANTED-access" not in proc.stdout + proc.stderr
    return proc


def _file_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PAIRLAB_ACCOUNTS_FILE"] = str(tmp_path / "cfg" / "accounts.json")
    env["PAIRLAB_ACCOUNT_STORE"] = "file"
    env["PLANTED_TOKEN"] = PLANTED
    return env


def _exercise(env: dict[str, str], tmp_path: Path, where: str) -> list[dict[str, Any]]:
    # a test session's one Prefect server keeps the Secret blocks other tests registered:
    # this test's names start unregistered (unknown: exit 2, fine), others may stay listed
    for name in ("max", "plus"):
        _run(env, "account", "remove", name)
    added = _run(env, "account", "add", "max", "--client", "claude", "--from-env", "PLANTED_TOKEN")
    assert added.returncode == 0, added.stderr
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps(AUTH_JSON))
    added = _run(
        env, "account", "add", "plus", "--client", "codex", "--from-file", str(auth),
        "--provider-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    again = _run(env, "account", "add", "max", "--client", "claude", "--from-env", "PLANTED_TOKEN")
    assert again.returncode == 2 and "account-exists" in again.stderr

    listed = _run(env, "account", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert doc["store"].startswith(where)
    rows = {r["name"]: r for r in doc["accounts"]}
    assert rows["max"]["kind"] == "subscription-token" and rows["max"]["isDefaultProvider"]
    assert rows["max"]["providerUrl"] == "https://api.anthropic.com"
    assert rows["plus"]["kind"] == "chatgpt-auth-json"
    assert rows["plus"]["providerUrl"] == "http://127.0.0.1:9/v1"
    assert _run(env, "account", "list").returncode == 0

    checked = _run(env, "account", "check", "plus", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["credentialPresent"] is True

    unknown = _run(env, "account", "check", "nobody", "--json")
    assert unknown.returncode == 2
    err = json.loads(unknown.stdout)
    assert err["reason_code"] == "account-unknown"
    known = err["error"].split("known accounts: ", 1)[1].split(", ")
    assert {"max", "plus"} <= set(known) and known == sorted(known), err["error"]

    missing = _run(env, "account", "add", "x", "--client", "claude", "--from-env", "UNSET_VAR_X")
    assert missing.returncode == 3 and "credential-missing" in missing.stderr

    assert _run(env, "account", "remove", "max").returncode == 0
    gone = _run(env, "account", "check", "max")
    assert gone.returncode == 2 and "account-unknown" in gone.stderr
    return list(rows.values())


def test_local_file_store_mode_600(tmp_path: Path) -> None:
    env = _file_env(tmp_path)
    _exercise(env, tmp_path, "file:")
    path = Path(env["PAIRLAB_ACCOUNTS_FILE"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # the codex credential is kept as given (its auth.json), the removed one is gone
    stored = json.loads(path.read_text())["accounts"]
    assert set(stored) == {"plus"} and json.loads(stored["plus"]["credential"]) == AUTH_JSON

    path.chmod(0o644)
    widened = _run(env, "account", "list")
    assert widened.returncode == 2 and "credential-store-insecure" in widened.stderr


@pytest.mark.prefect
def test_prefect_secret_store(prefect_server: Any, tmp_path: Path) -> None:
    env = dict(prefect_server.env)
    env["PAIRLAB_ACCOUNTS_FILE"] = str(tmp_path / "never" / "accounts.json")
    env["PLANTED_TOKEN"] = PLANTED
    _exercise(env, tmp_path, "prefect-secret:")
    assert not (tmp_path / "never").exists()  # nothing fell back to the local file

    # the Secret block holds it: the API shows it obfuscated unless secrets are asked for
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with (
        temporary_settings({PREFECT_API_URL: prefect_server.api_url}),
        get_client(sync_client=True) as client,
    ):
        hidden = client.read_block_document_by_name(
            "pairlab-account-plus", block_type_slug="secret", include_secrets=False
        )
        shown = client.read_block_document_by_name(
            "pairlab-account-plus", block_type_slug="secret", include_secrets=True
        )
    assert "PLANTED" not in json.dumps(hidden.data, default=str)
    assert "PLANTED-access-9d2e" in json.dumps(shown.data, default=str)

"""The stand-in provider for tests: ``pairlab emulator serve --require-auth`` as an external
process (never started through a run), and the accounts' local store in a temp dir."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support import CATALOG_DIR, REPO_ROOT, pairlab_argv
from tests.tls_support import TlsCa


@dataclass
class StandIn:
    url: str
    ledgers: Path
    ca_file: str | None = None  # the CA this process trusts for its admin API (TLS stand-in)

    def register(self, task_id: str, five_hour_limit: float | None = None) -> str:
        """Register one episode over the admin API; its base URL (``<url>/e/<token>``).
        ``five_hour_limit``: the weighted tokens of its account's five-hour window (a
        small one makes a few episodes move the window by whole percents)."""
        payload: dict[str, object] = {"task_id": task_id}
        if five_hour_limit is not None:
            payload |= {"account": "windowed", "plan": {"five_hour_limit": five_hour_limit}}
        verify = ssl.create_default_context(cafile=self.ca_file) if self.ca_file else True
        answer = httpx.post(f"{self.url}/admin/episodes", json=payload, verify=verify)
        answer.raise_for_status()
        return f"{self.url}/e/{answer.json()['token']}"


@contextlib.contextmanager
def running_standin(
    root: Path,
    *accept: str,
    expired: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    tls: TlsCa | None = None,
) -> Iterator[StandIn]:
    """The stand-in accepting ``accept`` (``env:VAR``/``file:PATH``/values; variables from
    ``env``, default this process's), answering ``expired`` as expired; stopped with SIGINT.
    ``tls``: HTTPS only, with the test CA's certificate; its URL then names ``tls.name``."""
    argv = pairlab_argv(
        "emulator", "serve", "--port", "0", "--ledger-dir", str(root / "ledgers"),
        "--catalog-dir", str(CATALOG_DIR), "--require-auth",
    )  # fmt: skip
    for credential in accept:
        argv += ["--accept-credential", credential]
    for credential in expired:
        argv += ["--expired-credential", credential]
    if tls is not None:
        argv += ["--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    server = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env={**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert "credentials required" in first, first + (
            server.stderr.read() if server.stderr else ""
        )
        url = first.split()[4]
        if tls is None:
            yield StandIn(url=url, ledgers=root / "ledgers")
        else:
            port = url.rsplit(":", 1)[1]
            yield StandIn(f"https://{tls.name}:{port}", root / "ledgers", str(tls.ca_pem))
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def local_accounts_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of a pairlab process whose accounts live in ``root`` (local file)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PAIRLAB_ACCOUNTS_FILE"] = str(root / "config" / "accounts.json")
    env["PAIRLAB_ACCOUNT_STORE"] = "file"
    env.update(extra)
    return env


def files_holding(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle`` (binary files too)."""
    raw = needle.encode()
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and raw in p.read_bytes())


def ledger_requests(ledger: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("kind") == "request"]


def register_account(
    env: dict[str, str], name: str, client: str, *source: str, provider_url: str
) -> str:
    """``pairlab account add NAME --client CLIENT SOURCE... --provider-url URL --replace``
    (``source``: ``--from-env VAR`` or ``--from-file PATH``). Replaced, not added: a test
    session's one Prefect server keeps the Secret blocks an earlier case registered, and a
    second add of the name would fail ``account-exists``. Returns what the command printed
    (stdout and stderr: a credential scan reads it too)."""
    added = subprocess.run(
        pairlab_argv(
            "account", "add", name, "--client", client, *source,
            "--provider-url", provider_url, "--replace",
        ),
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    return added.stdout + added.stderr

"""``pairlab certify --account NAME``: the isolation probe on the account path.

The probe's episodes run exactly as the account's episodes do -- the profile wired by
``adapters/accounts/episode_wiring`` (the account's variable, or Codex's auth.json in
the episode's CODEX_HOME; on Docker through the episode's secret mount), the account's
credential in place of the emulator's dummy one, no credential variable of the host's --
against the run's emulator acting as the stand-in provider: it requires exactly the
account's credential (``auth_gate``), and it keeps every request body, which is what the
isolation matrix reads (a real provider shows no request body, so the probe cannot read
isolation there; ``pairlab account check --probe`` asks the real provider). Every
check of the plain probe applies; two are added:

* ``account-credential``: every model request of every probe episode presented the
  account's credential in the form its CLI sends it (Claude Code: ``x-api-key`` for an
  API key, an OAuth bearer for a subscription token; Codex: a bearer, with
  ``chatgpt-account-id`` for a ChatGPT login) and the stand-in accepted it -- no model
  request refused, at least one billed;
* ``credential-scan``: the credential (an auth.json: each of its tokens) appears in
  nothing the probe wrote -- collected HOMEs and state, request bodies and ledgers, the
  planted host HOME -- nor in the report.

A run that passed or failed is recorded on the account's record
(:meth:`CertifyAccount.record_certification`; the rules, staleness included, in
``core/account_certification``): the latest run wins, a failure replacing an earlier pass.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pairlab.adapters.accounts.episode_wiring import (
    EMULATOR_URL,
    account_host_env,
    account_run_profile,
    account_secret_files,
    check_chatgpt_login,
)
from pairlab.adapters.accounts.selection import load_account, open_account_store
from pairlab.adapters.certify.report import CertifyCheck, ProfileCertification
from pairlab.core.account_certification import (
    AccountCertification,
    ca_bundle_sha256,
    report_sha256,
)
from pairlab.core.account_kinds import public_provider_url
from pairlab.core.accounts import Account, AccountStamp, CredentialKind
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile

_MODEL_PATHS = ("/v1/messages", "/responses")
_AUTH_FORMS = {
    ("claude", CredentialKind.API_KEY): "api-key",
    ("claude", CredentialKind.SUBSCRIPTION_TOKEN): "oauth",
    ("codex", CredentialKind.API_KEY): "bearer",
    ("codex", CredentialKind.CHATGPT_AUTH_JSON): "bearer",
}


@dataclass(frozen=True)
class CertifyAccount:
    """A registered account and its credential, for the probe (never printed)."""

    record: Account
    credential: str

    @classmethod
    def load(cls, name: str, client: str | None = None) -> CertifyAccount:
        record, credential = load_account(name)
        if client is not None and record.client != client:
            raise InvalidInputError(
                f"account {name!r} is a {record.client} account; profile {client!r} needs a "
                f"{client} account",
                reason=ReasonCode.INVALID_ACCOUNT,
            )
        check_chatgpt_login(record, credential)
        return cls(record, credential)

    def stamp(self) -> dict[str, object]:
        return AccountStamp.of(self.record).model_dump(mode="json")

    def probe_profile(self, profile: RunnerProfile) -> RunnerProfile:
        """The profile as the account runs it, pointed at the run's emulator per episode."""
        url = EMULATOR_URL
        if self.record.kind == CredentialKind.CHATGPT_AUTH_JSON:
            url = f"{EMULATOR_URL}/backend-api/codex"
        wired = account_run_profile(profile, self.record, provider_url=url)
        return wired.model_copy(update={"endpoint": "emulator"})

    def endpoint_options(self, profile: RunnerProfile) -> dict[str, object]:
        """``open_run_endpoint`` keywords: the credential in the CLI's form, nothing else."""
        env = account_host_env(profile, self.credential, {})
        return {
            "credentials": env,
            "secret_files": account_secret_files(self.record, self.credential),
        }

    def secrets(self) -> list[str]:
        """What must appear nowhere: the credential, and each token of an auth.json."""
        found = [self.credential.strip()]
        if self.record.kind == CredentialKind.CHATGPT_AUTH_JSON:
            tokens = json.loads(self.credential).get("tokens") or {}
            found += [str(tokens[k]) for k in ("access_token", "refresh_token") if tokens.get(k)]
        return [s for s in found if len(s) >= 8]

    def record_certification(
        self, result: ProfileCertification, report: Mapping[str, Any], backend: str
    ) -> AccountCertification | None:
        """Record this certify run on the account's record (``report``: the whole report's
        JSON, hashed as its id); None, and nothing recorded, for a result that is neither
        passed nor failed or whose profile did not load."""
        if result.status not in ("passed", "failed") or result.level is None:
            return None
        ident = result.intervention
        certification = AccountCertification(
            passed=result.status == "passed",
            level=result.level,
            against="stand-in",
            provider_url=public_provider_url(self.record.effective_provider_url),
            client=self.record.client,
            kind=self.record.kind,
            cli_version=result.version,
            profile=result.profile,
            backend=backend,
            intervention=None if ident is None else f"{ident['id']} {ident['version']}",
            certified_at=datetime.now(UTC).replace(microsecond=0),
            report_sha256=report_sha256(report),
            failed_checks=[c.name for c in result.checks if not c.passed],
            ca_bundle_sha256=ca_bundle_sha256(self.record.ca_bundle),
        )
        open_account_store().set_certification(self.record.name, certification)
        return certification

    def checks(self, scratch: Path, report_json: str) -> list[CertifyCheck]:
        return [self._credential_check(scratch / "emulator"), self._scan(scratch, report_json)]

    def _credential_check(self, ledgers: Path) -> CertifyCheck:
        form = _AUTH_FORMS[(self.record.client, self.record.kind)]
        rows = list(_rows(ledgers.glob("*.jsonl")))
        model = [r for r in rows if str(r.get("path", "")).endswith(_MODEL_PATHS)]
        refused = [r for r in model if r.get("status") == 401]
        accepted = [r for r in model if r.get("kind") == "request" and r.get("status") != 401]
        forms = sorted({str(r.get("auth")) for r in accepted})
        problems = []
        if refused:
            problems.append(f"{len(refused)} model requests refused by the stand-in (401)")
        if not any(r.get("billed") for r in accepted):
            problems.append("no model request was billed")
        if forms and forms != [form]:
            problems.append(f"the CLI presented {', '.join(forms)}, not {form}")
        if problems:
            return CertifyCheck(name="account-credential", passed=False, detail="; ".join(problems))
        return CertifyCheck(
            name="account-credential",
            passed=True,
            detail=f"all {len(accepted)} model requests presented the account's "
            f"{self.record.kind} as {form} and were accepted by the stand-in",
        )

    def _scan(self, scratch: Path, report_json: str) -> CertifyCheck:
        needles = [s.encode() for s in self.secrets()]
        holding = sorted(
            str(p.relative_to(scratch))
            for p in scratch.rglob("*")
            if p.is_file() and not p.is_symlink() and any(n in p.read_bytes() for n in needles)
        )
        if any(n.decode() in report_json for n in needles):
            holding.append("the certify report")
        if holding:
            return CertifyCheck(
                name="credential-scan",
                passed=False,
                detail="the credential is in " + ", ".join(holding[:10]),
            )
        files = sum(1 for p in scratch.rglob("*") if p.is_file())
        return CertifyCheck(
            name="credential-scan",
            passed=True,
            detail=f"the credential is in none of the {files} files the probe wrote "
            "(collected HOMEs and state, request bodies, ledgers) nor in the report",
        )


def _rows(paths: Iterable[Path]) -> Iterable[dict[str, object]]:
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if isinstance(row, dict):
                    yield row


def probe_host_env(home_env: dict[str, str]) -> dict[str, str]:
    """This process's environment with the planted host HOME, minus every credential
    variable (an account's probe takes no credential from the host)."""
    from pairlab.adapters.accounts.episode_wiring import CREDENTIAL_VARIABLES

    return {k: v for k, v in {**os.environ, **home_env}.items() if k not in CREDENTIAL_VARIABLES}


__all__ = ["CertifyAccount", "probe_host_env"]

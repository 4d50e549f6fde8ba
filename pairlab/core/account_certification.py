"""What ``pairlab certify --account NAME`` proved of an account, and whether it still holds
(issue 27 item 1).

The rules:

* A certify run on an account records one :class:`AccountCertification` on the account's
  record (which the store keeps beside the credential, never inside it; the
  certification holds no credential and nothing derived from one): whether it passed,
  the certification level of the profile it ran at (the profiles' own vocabulary,
  ``core/schemas/profile.CertificationLevel``: ``live-local`` for the real CLIs), what
  answered the probe's model requests (``against``: ``stand-in``, the run's emulator
  requiring exactly the account's credential -- the one provider whose request bodies
  show isolation), the account's provider URL then (without user info or query), the CLI
  and its version, the profile, backend and intervention, when, and the sha256 of the
  certify report (:func:`report_sha256`).
* The latest certify run on an account is the one recorded: a failed run replaces an
  earlier pass (``passed`` false, naming its failed checks), so a certification a later
  run could not reproduce is never shown as holding. A run that could not start (an
  unknown account, no credential, a refused manifest) records nothing.
* A passed certification is **stale** when what it proved changed: the account's provider
  URL, client, credential kind or private CA bundle (``--ca-file``, compared by
  :func:`ca_bundle_sha256`) is no longer the certified one, or the CLI's version here
  differs from the certified one. A version that cannot be read here is not compared
  (``unchecked``), never taken as the same.
* States: ``certified``, ``stale``, ``failed``, ``not-certified``. No state refuses an
  account (DESIGN 4c sets no such gate): the state is shown wherever the account is about
  to spend quota (the canary's approval, an eval's ``run.json`` and report facts) for
  whoever approves the spending.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from pairlab.core.account_kinds import AccountClient, CredentialKind, public_provider_url
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.profile import CertificationLevel

CertifiedAgainst = Literal["stand-in"]
CertificationState = Literal["certified", "stale", "failed", "not-certified"]
StaleCode = Literal[
    "provider-url-changed", "client-changed", "kind-changed", "ca-bundle-changed",
    "cli-version-changed",
]  # fmt: skip


def ca_bundle_sha256(bundle: str | None) -> str | None:
    """The sha256 of an account's private CA bundle as stored (None: no private CA)."""
    return None if bundle is None else hashlib.sha256(bundle.encode("utf-8")).hexdigest()


def report_sha256(report: Mapping[str, Any]) -> str:
    """The certify report's id: the sha256 of its JSON (``pairlab certify --json`` without
    its ``accountCertification``) with sorted keys, compact separators and UTF-8 text."""
    text = json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AccountCertification(StrictModel):
    """One certify run on an account, as recorded on its record (never the credential)."""

    schema_version: Literal[1] = 1
    passed: bool
    level: CertificationLevel
    against: CertifiedAgainst = "stand-in"
    provider_url: str  # the account's provider URL when certified (public_provider_url)
    client: AccountClient
    kind: CredentialKind
    cli_version: str | None
    profile: str
    backend: str
    intervention: str | None = None  # "<id> <version>" wired into the treated arms
    certified_at: datetime
    report_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    failed_checks: list[str] = Field(default_factory=list)
    # the account's private CA bundle then (ca_bundle_sha256; None: none)
    ca_bundle_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")

    def summary(self) -> str:
        """``live-local against the stand-in on <when> (claude 2.1.3, profile claude,
        local; report <12 hex>)``."""
        cli = f"{self.client} {self.cli_version or '(version unknown)'}"
        return (
            f"{self.level} against the {self.against} on {self.certified_at:%Y-%m-%d %H:%M} UTC "
            f"({cli}, profile {self.profile}, {self.backend}; report {self.report_sha256[:12]})"
        )


class StaleReason(StrictModel):
    code: StaleCode
    detail: str


class CertificationStatus(StrictModel):
    """An account's certification now: its state, the recorded certification, and why it
    is stale (or what could not be compared here)."""

    state: CertificationState
    certification: AccountCertification | None = None
    stale: list[StaleReason] = Field(default_factory=list)
    unchecked: list[str] = Field(default_factory=list)

    def short(self) -> str:
        """A table cell: ``certified live-local``, ``STALE``, ``FAILED``, ``not certified``."""
        cert = self.certification
        if cert is None or self.state == "not-certified":
            return "not certified"
        if self.state == "failed":
            return f"certify FAILED {cert.certified_at:%Y-%m-%d}"
        if self.state == "stale":
            return f"STALE ({', '.join(r.code for r in self.stale)})"
        return f"certified {cert.level} ({cert.against}) {cert.certified_at:%Y-%m-%d}"

    def line(self, account: str = "NAME") -> str:
        """The certification in one sentence, for people (list, check, the approval);
        ``account`` names the account in the command that certifies it."""
        cert = self.certification
        if cert is None or self.state == "not-certified":
            return f"not certified (pairlab certify --account {account} proves the account path)"
        if self.state == "failed":
            failed = ", ".join(cert.failed_checks) or "?"
            return f"certify FAILED: {cert.summary()}; failed checks: {failed}"
        text = f"certified {cert.summary()}"
        if self.state == "stale":
            text = f"STALE: {text}; " + "; ".join(r.detail for r in self.stale)
        if self.unchecked:
            text += f" (not compared here: {'; '.join(self.unchecked)})"
        return text

    def fact(self) -> str:
        """The report's facts-line words."""
        cert = self.certification
        if cert is None or self.state == "not-certified":
            return "NOT CERTIFIED"
        if self.state == "failed":
            return f"certify FAILED {cert.certified_at:%Y-%m-%d}"
        words = f"certified {cert.level} against the {cert.against} {cert.certified_at:%Y-%m-%d}"
        if self.state == "stale":
            words = f"certification STALE ({', '.join(r.code for r in self.stale)}; {words})"
        return words

    def to_json(self, account: str = "NAME") -> dict[str, Any]:
        cert = self.certification
        return {
            "state": self.state,
            "certification": None if cert is None else cert.model_dump(mode="json"),
            "stale": [r.model_dump(mode="json") for r in self.stale],
            "unchecked": list(self.unchecked),
            "line": self.line(account),
        }


def certification_status(
    certification: AccountCertification | None,
    *,
    client: AccountClient,
    kind: CredentialKind,
    provider_url: str,
    cli_version: str | None,
    ca_bundle: str | None = None,
) -> CertificationStatus:
    """The state of ``certification`` for an account that is now ``client``/``kind`` at
    ``provider_url`` (its effective URL), with ``cli_version`` of its CLI here (None: not
    readable here, so not compared)."""
    if certification is None:
        return CertificationStatus(state="not-certified")
    if not certification.passed:
        return CertificationStatus(state="failed", certification=certification)
    stale: list[StaleReason] = []
    url = public_provider_url(provider_url)
    if url != certification.provider_url:
        stale.append(
            StaleReason(
                code="provider-url-changed",
                detail=f"the provider URL changed (certified for {certification.provider_url}, "
                f"now {url})",
            )
        )
    if client != certification.client:
        stale.append(
            StaleReason(
                code="client-changed",
                detail=f"the account is now a {client} account (certified: {certification.client})",
            )
        )
    if kind != certification.kind:
        stale.append(
            StaleReason(
                code="kind-changed",
                detail=f"the credential is now a {kind} (certified: {certification.kind})",
            )
        )
    if ca_bundle_sha256(ca_bundle) != certification.ca_bundle_sha256:
        if certification.ca_bundle_sha256 is None:
            change = "was added since"
        elif ca_bundle is None:
            change = "was removed since"
        else:
            change = "is another one than the certified one"
        stale.append(
            StaleReason(code="ca-bundle-changed", detail=f"the private CA bundle {change}")
        )
    unchecked: list[str] = []
    if cli_version is None or certification.cli_version is None:
        unchecked.append(
            f"the {client} CLI's version ("
            + ("not readable here" if cli_version is None else "not recorded when certified")
            + ")"
        )
    elif cli_version != certification.cli_version and client == certification.client:
        stale.append(
            StaleReason(
                code="cli-version-changed",
                detail=f"the {client} CLI is now {cli_version} (certified with "
                f"{certification.cli_version})",
            )
        )
    return CertificationStatus(
        state="stale" if stale else "certified",
        certification=certification,
        stale=stale,
        unchecked=unchecked,
    )


__all__ = [
    "AccountCertification",
    "CertificationState",
    "CertificationStatus",
    "CertifiedAgainst",
    "StaleReason",
    "ca_bundle_sha256",
    "certification_status",
    "report_sha256",
]

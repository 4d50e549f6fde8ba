"""An account's certification as it stands here (the rules: ``core/account_certification``).

Whether a recorded certification is stale depends on this machine's CLI: its version is
read from the bundled binary (``adapters/clients/registry.resolve_cli``; the client images
are built from the same pinned wheels). A CLI that cannot be resolved here leaves the
version uncompared (``unchecked``), never taken as the certified one. A record without a
passed certification costs no look-up.
"""

from __future__ import annotations

from pairlab.core.account_certification import CertificationStatus
from pairlab.core.account_kinds import AccountClient
from pairlab.core.accounts import Account
from pairlab.core.errors import PairlabError


def cli_version_here(client: AccountClient) -> str | None:
    """The bundled CLI's version, or None when it cannot be resolved here."""
    from pairlab.adapters.clients.registry import resolve_cli

    try:
        return resolve_cli(client).version
    except PairlabError:
        return None


def certification_here(account: Account) -> CertificationStatus:
    """``account``'s certification now: certified, stale (with why), failed or not certified."""
    cert = account.certification
    version = cli_version_here(account.client) if cert is not None and cert.passed else None
    return account.certification_status(version)


__all__ = ["certification_here", "cli_version_here"]

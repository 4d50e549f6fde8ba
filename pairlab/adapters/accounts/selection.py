"""Which account store applies, and the look-ups commands and runs share.

A Prefect server named by ``PREFECT_API_URL`` (the environment or the active Prefect
profile) holds accounts as Secret blocks; without one, the local mode-600 file does.
``PAIRLAB_ACCOUNT_STORE=file`` forces the local file even with a server configured.
"""

from __future__ import annotations

import os

from pairlab.adapters.accounts.local_file import LocalFileAccountStore
from pairlab.adapters.accounts.prefect_secret import PrefectSecretAccountStore
from pairlab.core.accounts import Account, AccountStore
from pairlab.core.errors import EnvironmentUnavailable, ReasonCode


def configured_prefect_api_url() -> str | None:
    """``PREFECT_API_URL`` from the environment, else from the active Prefect profile."""
    from_env = os.environ.get("PREFECT_API_URL", "")
    if from_env:
        return from_env
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    return str(url) if url else None


def open_account_store() -> AccountStore:
    """The Prefect Secret store when a server is configured, else the local file."""
    if os.environ.get("PAIRLAB_ACCOUNT_STORE", "") == "file":
        return LocalFileAccountStore()
    api_url = configured_prefect_api_url()
    if api_url:
        return PrefectSecretAccountStore(api_url)
    return LocalFileAccountStore()


def load_account(name: str, store: AccountStore | None = None) -> tuple[Account, str]:
    """The account's record and credential; an empty credential is ``credential-missing``."""
    store = store or open_account_store()
    account = store.record(name)
    credential = store.credential(name)
    if not credential.strip():
        raise EnvironmentUnavailable(
            f"account {name!r} has no credential in {store.location}; "
            f"register it again (pairlab account add {name} --replace ...)",
            reason=ReasonCode.CREDENTIAL_MISSING,
        )
    return account, credential

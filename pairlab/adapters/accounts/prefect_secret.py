"""Accounts as Prefect Secret blocks (the Prefect convention for credentials).

One block per account, named ``pairlab-account-<name>``; its value is the JSON of
``{"account": <record>, "credential": <str>}``, so the Prefect UI shows it obfuscated and
the record and the credential stay one object. A server that cannot be reached is
``prefect-unavailable`` (exit 3).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from pairlab.core.account_certification import AccountCertification
from pairlab.core.accounts import Account, unknown_account
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode

BLOCK_PREFIX = "pairlab-account-"


@contextmanager
def _reachable(api_url: str) -> Iterator[None]:
    import httpx

    try:
        yield
    except (httpx.HTTPError, OSError) as exc:
        raise EnvironmentUnavailable(
            f"the Prefect server at {api_url} did not answer: {exc}",
            reason=ReasonCode.PREFECT_UNAVAILABLE,
        ) from exc


class PrefectSecretAccountStore:
    """Accounts in the Prefect server at ``api_url`` (one Secret block each)."""

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url

    @property
    def location(self) -> str:
        return f"prefect-secret:{self.api_url}"

    def names(self) -> list[str]:
        from prefect.client.orchestration import get_client

        with _reachable(self.api_url), get_client(sync_client=True) as client:
            docs = client.read_block_documents_by_type("secret", include_secrets=False)
        return sorted(
            d.name[len(BLOCK_PREFIX) :] for d in docs if d.name and d.name.startswith(BLOCK_PREFIX)
        )

    def _payload(self, name: str) -> dict[str, Any]:
        from prefect.blocks.system import Secret
        from prefect.exceptions import ObjectNotFound

        try:
            with _reachable(self.api_url):
                value = Secret.load(BLOCK_PREFIX + name).get()  # type: ignore[union-attr]
        except (ObjectNotFound, ValueError) as exc:
            if isinstance(exc, ValueError) and "Unable to find block document" not in str(exc):
                raise
            raise unknown_account(name, self.names()) from exc
        if not isinstance(value, dict):
            raise InvalidInputError(
                f"Secret block {BLOCK_PREFIX}{name} does not hold a pairlab account",
                reason=ReasonCode.MALFORMED_INPUT,
            )
        return value

    def save(self, account: Account, credential: str, *, replace: bool) -> None:
        from prefect.blocks.system import Secret

        if account.name in self.names() and not replace:
            raise InvalidInputError(
                f"account {account.name!r} exists; remove it first or pass --replace",
                reason=ReasonCode.ACCOUNT_EXISTS,
            )
        payload = json.dumps({"account": account.model_dump(mode="json"), "credential": credential})
        with _reachable(self.api_url):
            Secret(value=payload).save(BLOCK_PREFIX + account.name, overwrite=True)

    def record(self, name: str) -> Account:
        try:
            return Account.model_validate(self._payload(name)["account"], strict=False)
        except (KeyError, ValidationError) as exc:
            raise InvalidInputError(
                f"Secret block {BLOCK_PREFIX}{name} is malformed: {exc}",
                reason=ReasonCode.MALFORMED_INPUT,
            ) from exc

    def credential(self, name: str) -> str:
        value = self._payload(name).get("credential")
        return value if isinstance(value, str) else ""

    def set_certification(self, name: str, certification: AccountCertification) -> Account:
        """The block's record rewritten with ``certification``; its credential is written
        back as it was read (one Secret block holds both, and a Secret's value is replaced
        whole)."""
        from prefect.blocks.system import Secret

        payload = self._payload(name)
        record = self.record(name).model_copy(update={"certification": certification})
        value = json.dumps({**payload, "account": record.model_dump(mode="json")})
        with _reachable(self.api_url):
            Secret(value=value).save(BLOCK_PREFIX + name, overwrite=True)
        return record

    def remove(self, name: str) -> None:
        from prefect.client.orchestration import get_client
        from prefect.exceptions import ObjectNotFound

        with _reachable(self.api_url), get_client(sync_client=True) as client:
            try:
                doc = client.read_block_document_by_name(
                    BLOCK_PREFIX + name, block_type_slug="secret", include_secrets=False
                )
            except ObjectNotFound as exc:
                raise unknown_account(name, self.names()) from exc
            client.delete_block_document(doc.id)

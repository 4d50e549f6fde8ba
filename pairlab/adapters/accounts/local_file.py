"""The local fallback account store: one JSON file, mode 600, in a directory of mode 700.

Where: ``$PAIRLAB_ACCOUNTS_FILE``, else ``$XDG_CONFIG_HOME/pairlab/accounts.json``, else
``~/.config/pairlab/accounts.json``. Every write goes to a temporary file created with
mode 600 (never wider, not even for a moment) and is renamed over the old one. A file
that group or others can read is refused (``credential-store-insecure``, exit 2) before
anything is read from it: whoever widened it should know the credentials may be exposed.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pairlab.core.account_certification import AccountCertification
from pairlab.core.accounts import Account, unknown_account
from pairlab.core.errors import InvalidInputError, ReasonCode

FILE_MODE = 0o600
DIR_MODE = 0o700


def default_accounts_file() -> Path:
    """``$PAIRLAB_ACCOUNTS_FILE``, else ``$XDG_CONFIG_HOME/pairlab/accounts.json``, else
    ``~/.config/pairlab/accounts.json``."""
    explicit = os.environ.get("PAIRLAB_ACCOUNTS_FILE", "")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pairlab" / "accounts.json"


class LocalFileAccountStore:
    """Accounts in one mode-600 JSON file: ``{"accounts": {name: {account, credential}}}``."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_accounts_file()

    @property
    def location(self) -> str:
        return f"file:{self.path}"

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            return {}
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise InvalidInputError(
                f"{self.path} is readable by others (mode {stat.S_IMODE(mode):o}); "
                f"`chmod 600 {self.path}` and consider the credentials in it exposed",
                reason=ReasonCode.CREDENTIAL_STORE_INSECURE,
            )
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInputError(
                f"cannot read the accounts file {self.path}: {exc}",
                reason=ReasonCode.INPUT_READ_FAILED,
            ) from exc
        accounts = doc.get("accounts") if isinstance(doc, dict) else None
        if not isinstance(accounts, dict):
            raise InvalidInputError(
                f"{self.path} has no 'accounts' object", reason=ReasonCode.MALFORMED_INPUT
            )
        return accounts

    def _write(self, accounts: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)  # an existing temp file keeps its mode through O_CREAT
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"accounts": accounts}, out, indent=2, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def names(self) -> list[str]:
        return sorted(self._read())

    def save(self, account: Account, credential: str, *, replace: bool) -> None:
        accounts = self._read()
        if account.name in accounts and not replace:
            raise InvalidInputError(
                f"account {account.name!r} exists; remove it first or pass --replace",
                reason=ReasonCode.ACCOUNT_EXISTS,
            )
        accounts[account.name] = {
            "account": account.model_dump(mode="json"),
            "credential": credential,
        }
        self._write(accounts)

    def _entry(self, name: str) -> dict[str, Any]:
        accounts = self._read()
        if name not in accounts:
            raise unknown_account(name, sorted(accounts))
        return accounts[name]

    def record(self, name: str) -> Account:
        try:
            return Account.model_validate(self._entry(name)["account"], strict=False)
        except (KeyError, ValidationError) as exc:
            raise InvalidInputError(
                f"account {name!r} in {self.path} is malformed: {exc}",
                reason=ReasonCode.MALFORMED_INPUT,
            ) from exc

    def credential(self, name: str) -> str:
        value = self._entry(name).get("credential")
        return value if isinstance(value, str) else ""

    def set_certification(self, name: str, certification: AccountCertification) -> Account:
        """The record rewritten with ``certification``; the entry's credential is written
        back as it was read (one file holds both; nothing else of the entry changes)."""
        accounts = self._read()
        if name not in accounts:
            raise unknown_account(name, sorted(accounts))
        record = self.record(name).model_copy(update={"certification": certification})
        accounts[name] = {**accounts[name], "account": record.model_dump(mode="json")}
        self._write(accounts)
        return record

    def remove(self, name: str) -> None:
        accounts = self._read()
        if name not in accounts:
            raise unknown_account(name, sorted(accounts))
        del accounts[name]
        self._write(accounts)

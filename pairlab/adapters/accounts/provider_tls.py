"""TLS to an account's provider: which CAs are trusted, how an episode's CLI is told, and the
check that refuses an untrusted provider before anything runs.

Trust is the public roots (Mozilla's, as ``certifi`` ships them -- what the CLIs carry:
Claude Code's runtime bundles them, the client images' ``ca-certificates`` are them)
plus the account's own CA bundle (``Account.ca_bundle``, ``pairlab account add
--ca-file``): a gateway signed by a private CA is trusted only when the account declares
that CA. A CA present only in this host's system store is not given to an episode
(a container has its image's store), so it is not trusted here either.

How each CLI takes the extra CA (added to its roots, not replacing them):

| client | variable | source |
| --- | --- | --- |
| claude | ``NODE_EXTRA_CA_CERTS`` | Node/Bun's variable; Claude Code 2.1.332 names it in its own TLS error |
| codex | ``CODEX_CA_CERTIFICATE`` | codex-rs ``http-client/src/custom_ca.rs`` (before ``SSL_CERT_FILE``), Codex 0.163.0 |

The bundle is written to a file for the run (:class:`ProviderCaFile`, removed when the
run closes): on the local backend the variable names that host file; on Docker the file
is bind-mounted read-only at :data:`PROVIDER_CA_MOUNT` and the variable names the mount.

:func:`check_provider_tls` makes one TLS handshake with an ``https`` provider from this
host -- the host is where a Docker episode's connection leaves too (the run network's
relay connects to the provider's name) -- with that trust, checking the certificate
against the URL's host name. A certificate that does not verify is
``provider-tls-untrusted`` (exit 2) naming the verifier's reason, before anything runs:
measured with Codex 0.163.0, a CLI that does not trust the provider does not say so --
it retries "Reconnecting... waiting for network (error sending request)" until the
episode's timeout. A provider that does not answer at all is left to the CLI (its own
error, as before). No HTTP request is sent and no credential leaves the store. The
subscription-window snapshots and ``account check --probe`` use the same trust.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import certifi

from pairlab.core.accounts import Account
from pairlab.core.errors import InvalidInputError, ReasonCode

CA_VARIABLES = {"claude": "NODE_EXTRA_CA_CERTS", "codex": "CODEX_CA_CERTIFICATE"}
PROVIDER_CA_MOUNT = "/run/pairlab-provider-ca.pem"
HANDSHAKE_TIMEOUT_S = 15.0


def trust_with(ca_bundle: str | None) -> ssl.SSLContext:
    """A client TLS context: the public roots (certifi's), plus ``ca_bundle`` if given."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_bundle:
        context.load_verify_locations(cadata=ca_bundle)
    return context


def trust_context(account: Account) -> ssl.SSLContext:
    """A client TLS context trusting the public roots and the account's CA bundle."""
    try:
        return trust_with(account.ca_bundle)
    except ssl.SSLError as exc:
        raise InvalidInputError(
            f"account {account.name!r}: its CA bundle does not load ({exc}); register it "
            "again with --ca-file and --replace",
            reason=ReasonCode.INVALID_CA_BUNDLE,
        ) from exc


# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH
_NAME_MISMATCH = frozenset({62, 64})


def untrusted_provider(
    account: Account, url: str, error: ssl.SSLCertVerificationError
) -> InvalidInputError:
    """``provider-tls-untrusted``: the verifier's reason and what to do about it."""
    why = error.verify_message or str(error)
    if error.verify_code in _NAME_MISMATCH:
        advice = (
            "the certificate is not issued for that host: give --provider-url the name the "
            "certificate names"
        )
    else:
        declared = (
            "the CA bundle the account declares does not sign it"
            if account.ca_bundle
            else "the account declares no CA bundle"
        )
        advice = (
            f"{declared}; for a gateway with a private CA register the account again with "
            "`--ca-file CA.pem --replace`"
        )
    return InvalidInputError(
        f"account {account.name!r}: the TLS certificate of {url} is not trusted ({why}); "
        f"{advice}. Nothing was run",
        reason=ReasonCode.PROVIDER_TLS_UNTRUSTED,
    )


def check_provider_tls(account: Account, url: str | None = None) -> bool | None:
    """One TLS handshake with the provider (module doc). True: verified; None: not TLS,
    or no answer (left to the CLI); raises ``provider-tls-untrusted`` when it does not
    verify."""
    target = url or account.effective_provider_url
    parts = urlsplit(target)
    if parts.scheme != "https" or not parts.hostname:
        return None
    context = trust_context(account)
    try:
        with (
            socket.create_connection(
                (parts.hostname, parts.port or 443), timeout=HANDSHAKE_TIMEOUT_S
            ) as raw,
            context.wrap_socket(raw, server_hostname=parts.hostname),
        ):
            return True
    except ssl.SSLCertVerificationError as exc:
        raise untrusted_provider(account, target, exc) from exc
    except (OSError, ssl.SSLError):
        return None


class ProviderCaFile:
    """The account's CA bundle as a file for one run (readable by the episode's user,
    which on Docker is not this one); removed by :meth:`close`."""

    def __init__(self, bundle: str) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="pairlab-provider-ca-"))
        self._dir.chmod(0o755)
        self.path = self._dir / "ca.pem"
        self.path.write_text(bundle, encoding="utf-8")
        self.path.chmod(0o644)

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


__all__ = [
    "CA_VARIABLES",
    "PROVIDER_CA_MOUNT",
    "ProviderCaFile",
    "check_provider_tls",
    "trust_context",
    "trust_with",
    "untrusted_provider",
]

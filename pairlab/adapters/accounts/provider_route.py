"""How an account's episode container reaches the account's provider, and nothing else.

An episode container has no network of its own: it joins a run network
(``pairlab.adapters.backends.run_network``) whose relay passes connections to services
through this process. For an account the run network has one service, the provider's
host and port:

* a provider on this machine (a loopback or IP address: the stand-in provider, a local
  gateway) is reached as ``http://provider:<port><path>`` -- the relay passes each
  connection to the address the account names;
* a named provider (``https://api.anthropic.com``, ``https://chatgpt.com/...``, a
  gateway's name) keeps its URL: the container resolves that one name to the relay
  (``/etc/hosts``), which listens on the URL's port, and the host connects to the name.
  TLS runs end to end between the CLI and the provider (the relay copies bytes), so the
  certificate is checked against the name as usual, with the public roots and the
  account's own CA if it declares one (``provider_tls``: ``NODE_EXTRA_CA_CERTS`` /
  ``CODEX_CA_CERTIFICATE``, the bundle mounted read-only). The relay, an unprivileged
  user, listens on that port (443): Docker 20.10+ sets ``ip_unprivileged_port_start=0``
  in a container's network namespace (measured here).

Measured offline (tests/integration/test_account_provider_tls.py): the stand-in provider
serving HTTPS only, with a certificate for this machine's host name (resolving to
127.0.0.1) from a CA made in the test; Claude Code 2.1.332 and Codex 0.163.0 on Docker,
through this route and the relay, each complete an episode whose requests reach the
stand-in over TLS, trusting the CA only through the account's ``--ca-file``; without it
(or with a URL the certificate does not name) the run is refused, ``provider-tls-untrusted``.
What is not exercised here (no network): the real providers' certificates and
connections to them, and a gateway on another machine.

So the container reaches exactly the provider's host and port. Egress is the host's:
the process running the episodes (the worker) must be allowed to reach that host and
port -- for the real providers ``api.anthropic.com:443`` (Claude Code),
``api.openai.com:443`` (Codex with an API key) or ``chatgpt.com:443`` (a ChatGPT login)
-- and to resolve its name. The CLIs' other hosts (telemetry, update checks, plugins)
are not reachable: their lookups fail at once.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from pairlab.adapters.backends.run_network import HostService
from pairlab.core.errors import InvalidInputError, ReasonCode

LOCAL_ALIAS = "provider"


@dataclass(frozen=True)
class ProviderRoute:
    service: HostService  # what the run network relays
    container_url: str  # the provider URL as the episode container reaches it


def _is_local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def provider_route(url: str) -> ProviderRoute:
    """The run-network service and container URL for the provider at ``url``."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidInputError(
            f"provider URL {url!r} is not an http(s) URL", reason=ReasonCode.INVALID_ACCOUNT
        )
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if _is_local(host):
        service = HostService(LOCAL_ALIAS, port=port, host=host, listen_port=port)
        netloc = f"{LOCAL_ALIAS}:{port}"
        return ProviderRoute(
            service, urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        )
    service = HostService(host, port=port, host=host, listen_port=port)
    return ProviderRoute(service, url)


__all__ = ["LOCAL_ALIAS", "ProviderRoute", "provider_route"]

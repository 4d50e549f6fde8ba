"""An account's credential, wired into a run's episodes in the form each CLI reads.

``account_run_profile(profile, account)`` turns a shipped profile (``endpoint:
emulator``) into the account's: the CLI talks to the account's provider URL (the real
provider unless the account names another) instead of a run's emulator, and the profile
declares exactly one secret, the variable its CLI reads the credential from:

| client | kind | variable | endpoint |
| --- | --- | --- | --- |
| claude | subscription-token | ``CLAUDE_CODE_OAUTH_TOKEN`` | ``ANTHROPIC_BASE_URL`` = provider URL |
| claude | api-key | ``ANTHROPIC_API_KEY`` | same |
| codex | api-key | the profile's provider ``env_key`` | the profile's provider ``base_url`` = provider URL |
| codex | chatgpt-auth-json | none: ``$CODEX_HOME/auth.json`` | the provider with ``requires_openai_auth`` and ``base_url`` = provider URL |

An account with a CA bundle (a gateway's private CA) also sets ``NODE_EXTRA_CA_CERTS``
(claude) or ``CODEX_CA_CERTIFICATE`` (codex) to the bundle's file (``provider_tls``).

A ChatGPT login is Codex's own ``auth.json``, written into the episode's fresh
``CODEX_HOME`` (:func:`account_secret_files`; the backends remove it after the run and
never collect it). Codex then sends ``Authorization: Bearer <tokens.access_token>`` and
``chatgpt-account-id: <tokens.account_id>`` to ``<provider URL>/responses`` (default
``https://chatgpt.com/backend-api/codex``), and its other ChatGPT-backend calls to
``chatgpt_base_url`` (the provider URL without ``/codex``). An episode never refreshes
the login: a refresh token is single-use, so a refresh inside an episode would spend the
operator's stored one and the next episode's copy would be refused. Codex refreshes when
the access token's ``exp`` has passed (or, without one, when ``last_refresh`` is more than
8 days old) and after a 401; ``CODEX_REFRESH_TOKEN_URL_OVERRIDE`` points it at a closed
local port, so a refresh fails at once (no wait on auth.openai.com offline) and Codex goes
on with the token it has. A login whose access token has already expired is refused before
anything runs (:func:`check_chatgpt_login`, ``credential-rejected``): refresh it with any
``codex`` command on your own machine and register it again with ``--replace``.

The credential itself travels only in :func:`account_host_env` (the host environment the
backend takes secrets from) or :func:`account_secret_files`: the backends put a declared
secret into the agent's environment (on Docker through a file mounted for the episode
only) and record only its name (``PreparedEpisode.secret_names``), never its value, so it
reaches no record, manifest, log or artifact. The profile's quota probe reads the
account's subscription windows from the provider's usage endpoint (``quota_wiring``): the
profile names only the account, and each snapshot reads the credential from the store.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime

from pairlab.adapters.accounts.provider_tls import CA_VARIABLES
from pairlab.adapters.accounts.quota_wiring import account_quota_source
from pairlab.adapters.run.provider import DUMMY_CREDENTIALS
from pairlab.core.accounts import Account, CredentialKind
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile

EMULATOR_URL = "{emulatorUrl}"
CLAUDE_VARIABLES = {
    CredentialKind.SUBSCRIPTION_TOKEN: "CLAUDE_CODE_OAUTH_TOKEN",
    CredentialKind.API_KEY: "ANTHROPIC_API_KEY",
}
# every variable a credential could be read from: never taken from the host for an account
CREDENTIAL_VARIABLES = frozenset(
    {
        *DUMMY_CREDENTIALS,
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "CODEX_ACCESS_TOKEN",
    }
)
# where a ChatGPT login goes, relative to the episode HOME (CODEX_HOME is {home}/.codex)
CODEX_AUTH_FILE = ".codex/auth.json"
# a closed local port: Codex's token refresh fails at once instead of spending the login
NO_REFRESH_URL = "http://127.0.0.1:9/oauth/token"
CODEX_PROVIDER_ARG = "model_providers.pairlab-emulator="


def _provider_base(account: Account, provider_url: str) -> str:
    """The URL ``{emulatorUrl}`` stood for: Codex profiles append ``/v1`` themselves."""
    url = provider_url.rstrip("/")
    if account.client == "codex" and url.endswith("/v1"):
        return url[: -len("/v1")]
    return url


def _chatgpt_args(args: list[str], provider_url: str) -> list[str]:
    """The Codex profile's provider, as a ChatGPT login uses it: ``requires_openai_auth``
    (Codex's auth.json), no ``env_key``; its other ChatGPT-backend calls to the provider."""
    url = provider_url.rstrip("/")
    provider = (
        f'{CODEX_PROVIDER_ARG}{{name="pairlab account",base_url="{url}",'
        'wire_api="responses",requires_openai_auth=true}'
    )
    out = [provider if a.startswith(CODEX_PROVIDER_ARG) else a for a in args]
    # a ChatGPT login gives Codex a built-in image_gen tool an API key does not: off, so
    # that the arms still differ by the intervention alone (pairlab certify --account)
    extra = ["--disable", "image_generation"]
    if url.endswith("/codex"):
        extra += ["-c", f'chatgpt_base_url="{url[: -len("/codex")]}"']
    out[-1:-1] = extra
    return out


def _pointed(values: list[str], base: str) -> list[str]:
    return [v.replace(EMULATOR_URL, base) for v in values]


def account_run_profile(
    profile: RunnerProfile,
    account: Account,
    *,
    provider_url: str | None = None,
    ca_path: str | None = None,
) -> RunnerProfile:
    """The profile as the account runs it (see the module doc); refuses a client mismatch.
    ``provider_url``: the provider as the agent reaches it (on Docker, through the run
    network), by default the account's own. ``ca_path``: where the agent reads the
    account's CA bundle (``provider_tls``), given in the variable its CLI takes it from."""
    if profile.client != account.client:
        raise InvalidInputError(
            f"account {account.name!r} is a {account.client} account; profile "
            f"{profile.client!r} needs a {profile.client} account",
            reason=ReasonCode.INVALID_ACCOUNT,
        )
    if profile.endpoint != "emulator":
        # the wiring re-points the emulator's URL placeholder; a profile without one (e.g.
        # one already wired for an account) would silently keep the URL it has
        raise InvalidInputError(
            f"profile {profile.client!r} does not run against the provider emulator "
            "(endpoint: emulator), so an account cannot be wired into it (wired already?)",
            reason=ReasonCode.INVALID_PROFILE,
        )
    url = provider_url or account.effective_provider_url
    base = _provider_base(account, url)
    secrets: list[str] = []
    args = _pointed(profile.args, base)
    env = {k: v.replace(EMULATOR_URL, base) for k, v in profile.env.items()}
    if ca_path is not None:
        env[CA_VARIABLES[account.client]] = ca_path
    if account.kind == CredentialKind.CHATGPT_AUTH_JSON:
        args = _chatgpt_args(args, url)
        env["CODEX_REFRESH_TOKEN_URL_OVERRIDE"] = NO_REFRESH_URL
        env["CODEX_REVOKE_TOKEN_URL_OVERRIDE"] = NO_REFRESH_URL.replace("token", "revoke")
    elif profile.client == "claude":
        secrets = [CLAUDE_VARIABLES[account.kind]]
    else:
        secrets = [next((s for s in profile.secrets if s in DUMMY_CREDENTIALS), "OPENAI_API_KEY")]
    arm_args = {arm: _pointed(a, base) for arm, a in profile.arm_args.items()}
    quota = account_quota_source(account)
    return profile.model_copy(
        update={
            "endpoint": None,
            "env": env,
            "args": args,
            "arm_args": arm_args,
            "secrets": secrets,
            "quota": quota,
        }
    )


def account_host_env(
    profile: RunnerProfile, credential: str, host_env: Mapping[str, str]
) -> dict[str, str]:
    """The host environment the backend takes secrets from: no credential variable of the
    host's, and the account's credential under the profile's one secret (none for a
    ChatGPT login, whose credential is a file: :func:`account_secret_files`)."""
    env = {k: v for k, v in host_env.items() if k not in CREDENTIAL_VARIABLES}
    if profile.secrets:
        env[profile.secrets[0]] = credential
    return env


def account_secret_files(account: Account, credential: str) -> dict[str, str]:
    """Files the episode's CLI reads its credential from, relative to the episode HOME:
    a ChatGPT login's ``auth.json`` in ``CODEX_HOME``; none for the other kinds."""
    if account.kind == CredentialKind.CHATGPT_AUTH_JSON:
        return {CODEX_AUTH_FILE: credential}
    return {}


def _jwt_expiry(token: str) -> datetime | None:
    """The ``exp`` claim of a JWT (unverified: only to see that it has passed), else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
        return datetime.fromtimestamp(float(claims["exp"]), UTC)
    except (ValueError, KeyError, TypeError):
        return None


def check_chatgpt_login(account: Account, credential: str, *, now: datetime | None = None) -> None:
    """Refuse a ChatGPT login whose access token has expired (``credential-rejected``):
    an episode never refreshes it (see the module doc). A token without a readable
    ``exp`` is left to the provider."""
    if account.kind != CredentialKind.CHATGPT_AUTH_JSON:
        return
    tokens = json.loads(credential).get("tokens") or {}
    access = tokens.get("access_token") if isinstance(tokens, dict) else None
    expiry = _jwt_expiry(access) if isinstance(access, str) else None
    if expiry is not None and expiry <= (now or datetime.now(UTC)):
        raise InvalidInputError(
            f"account {account.name!r}: the ChatGPT login's access token expired at "
            f"{expiry.isoformat()}; episodes never refresh it. Run any `codex` command on "
            "your own machine (it refreshes ~/.codex/auth.json), then `pairlab account add "
            f"{account.name} --client codex --from-file ~/.codex/auth.json --replace`",
            reason=ReasonCode.CREDENTIAL_REJECTED,
        )

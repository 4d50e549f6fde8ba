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

A ChatGPT login's ``auth.json`` goes into the episode's ``CODEX_HOME`` and talks to the
ChatGPT backend, not the Responses API: not wired yet (refused, ``invalid-account``).

The credential itself travels only in :func:`account_host_env`, the host environment the
backend takes secrets from: the backends put a declared secret into the agent's
environment and record only its name (``PreparedEpisode.secret_names``), never its value,
so it reaches no record, manifest, log or artifact. The profile's quota probe is given no
token (an account's windows are read in a later step, issue 27 item 4; until then unknown).
"""

from __future__ import annotations

from collections.abc import Mapping

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
    {*DUMMY_CREDENTIALS, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}
)


def _provider_base(account: Account) -> str:
    """The URL ``{emulatorUrl}`` stood for: Codex profiles append ``/v1`` themselves."""
    url = account.effective_provider_url.rstrip("/")
    if account.client == "codex" and url.endswith("/v1"):
        return url[: -len("/v1")]
    return url


def _pointed(values: list[str], base: str) -> list[str]:
    return [v.replace(EMULATOR_URL, base) for v in values]


def account_run_profile(profile: RunnerProfile, account: Account) -> RunnerProfile:
    """The profile as the account runs it (see the module doc); refuses a client mismatch."""
    if profile.client != account.client:
        raise InvalidInputError(
            f"account {account.name!r} is a {account.client} account; profile "
            f"{profile.client!r} needs a {profile.client} account",
            reason=ReasonCode.INVALID_ACCOUNT,
        )
    if account.kind == CredentialKind.CHATGPT_AUTH_JSON:
        raise InvalidInputError(
            f"account {account.name!r} is a ChatGPT login (auth.json); runs take a Codex "
            "API-key account for now (docs/accounts.md)",
            reason=ReasonCode.INVALID_ACCOUNT,
        )
    base = _provider_base(account)
    if profile.client == "claude":
        variable = CLAUDE_VARIABLES[account.kind]
    else:
        variable = next((s for s in profile.secrets if s in DUMMY_CREDENTIALS), "OPENAI_API_KEY")
    env = {k: v.replace(EMULATOR_URL, base) for k, v in profile.env.items()}
    arm_args = {arm: _pointed(args, base) for arm, args in profile.arm_args.items()}
    quota = profile.quota.model_copy(update={"options": {}, "charge_log_url": None})
    return profile.model_copy(
        update={
            "endpoint": None,
            "env": env,
            "args": _pointed(profile.args, base),
            "arm_args": arm_args,
            "secrets": [variable],
            "quota": quota,
        }
    )


def account_host_env(
    profile: RunnerProfile, credential: str, host_env: Mapping[str, str]
) -> dict[str, str]:
    """The host environment the backend takes secrets from: no credential variable of the
    host's, and the account's credential under the profile's one secret."""
    env = {k: v for k, v in host_env.items() if k not in CREDENTIAL_VARIABLES}
    env[profile.secrets[0]] = credential
    return env

"""A provider's rate limit or usage limit mid-canary: ``provider-limit`` (issue 27 item 5).

The rule is the eval's (:mod:`pairlab.core.provider_limit`), read from the CLI's own
output (a trial on an account talks to the real provider: no emulator ledger of its
own). A run a limit ended is recorded (its episode record excluded as
``provider-limit``, ``provider-limit.json`` beside it with the CLI's words) and its
evidence says ``excluded_reason: provider-limit``: it never enters loom's artifact.

Unlike an eval, the trial then **stops**: the rest of the pair and every later pair are
not run. A canary spends one account one run at a time, and the account's next run
would meet the same limit (a usage limit lasts until its window resets; a rate limit
the CLI already retried through its own budget), so going on would only repeat it.
pairlab never retries a run itself. The trial is judged and published on the complete
pairs (the limited pair is not one), and ends Cancelled with the message
``provider-limit: ...`` (outcome ``provider-limit``): a named state, never the
trial's verdict, whatever the complete pairs say.

A resume of the trial (same Run Id, approved again) sets the limited pair aside first
(its evidence under ``trials/provider-limited/``, its episode directories under
``provider-limited/``: kept and published, never deleted) and runs that pair again
whole, so each run id ends with one record and one piece of evidence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from flows.canary.evidence_files import evidence_name, load_evidence
from flows.canary.manifest import TRIALS
from pairlab.adapters.clients.base import json_lines
from pairlab.adapters.run.directory import RunDir, safe_name
from pairlab.adapters.run.provider_limited import set_aside_limited_pairs, write_limit
from pairlab.core.canary import RunEvidence
from pairlab.core.provider_limit import (
    LIMIT_FILE,
    PROVIDER_LIMIT,
    PROVIDER_LIMITED_DIR,
    ProviderLimit,
)
from pairlab.core.provider_limit import provider_limit as read_limit
from pairlab.core.schedule import PlannedEpisode

EVIDENCE_ASIDE: Final = f"{TRIALS}/{PROVIDER_LIMITED_DIR}"  # trials/provider-limited/


def run_limit(client: str, stdout: str, episode_dir: Path) -> ProviderLimit | None:
    """The limit that ended the run, by the CLI's own output (else None); when there is
    one, ``provider-limit.json`` is written beside the run's record."""
    limit = read_limit(client, json_lines(stdout))
    if limit is not None:
        write_limit(episode_dir, limit)
    return limit


def set_aside_limited(run_dir: RunDir, entries: Sequence[PlannedEpisode]) -> set[str]:
    """A resumed trial: every pair with a provider-limited run is moved out of the way
    (its evidence to ``trials/provider-limited/<episode>.<n>.json``, its episode
    directories to ``provider-limited/``) so it runs again whole; the pair ids."""
    pairs = {
        p.pair_id
        for p in entries
        if (ev := load_evidence(run_dir, p.episode_id)) is not None
        and ev.excluded_reason == PROVIDER_LIMIT
    }
    pairs |= set_aside_limited_pairs(run_dir, entries)  # the episode dirs, by their records
    aside = run_dir.path / EVIDENCE_ASIDE
    for p in entries:
        source = run_dir.path / evidence_name(p.episode_id)
        if p.pair_id not in pairs or not source.is_file():
            continue
        aside.mkdir(parents=True, exist_ok=True)
        n = 1
        while (aside / f"{safe_name(p.episode_id)}.{n}.json").exists():
            n += 1
        source.rename(aside / f"{safe_name(p.episode_id)}.{n}.json")
    return pairs


def limit_stop_message(trial_id: str) -> str:
    """The final state's message of a trial a provider limit stopped."""
    return f"provider-limit: resume with Run Id {trial_id} once the provider's limit lifts"


def limit_words(limited: RunEvidence, message: str | None) -> str:
    """One line for the log, the report and the result: which run, which limit, the CLI's
    words."""
    said = f": {message}" if message else ""
    return f"{limited.limit_kind or 'limit'} on run {limited.episode_id} ({limited.arm}){said}"


def limit_message(run_dir: RunDir, episode_id: str) -> str | None:
    """The CLI's words of the limit, as written beside the run's record (None: none)."""
    path = run_dir.episode_dir(episode_id) / LIMIT_FILE
    if not path.is_file():
        return None
    return str(json.loads(path.read_text(encoding="utf-8")).get("message") or "") or None


__all__ = [
    "EVIDENCE_ASIDE",
    "limit_message",
    "limit_stop_message",
    "limit_words",
    "run_limit",
    "set_aside_limited",
]

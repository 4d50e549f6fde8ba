"""Command line: ``simclient exec --format claude|codex|gemini [--model M] [--cwd DIR] PROMPT``,
``simclient quota`` and ``simclient --version``. Exit codes: 0 done (solved or not),
2 invalid usage or configuration, 3 an injected crash.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from pairlab_simclient import __version__
from pairlab_simclient.config import ConfigError, load_config
from pairlab_simclient.episode import run_episode
from pairlab_simclient.episode_env import parse_ts, read_episode_env
from pairlab_simclient.faults import FAULTS, trigger_fault
from pairlab_simclient.home_scan import scan_home
from pairlab_simclient.quota import read_quota, roll_windows

USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simclient", description="Deterministic coding-agent CLI simulator."
    )
    parser.add_argument("--version", action="version", version=f"simclient {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("exec", help="run one simulated agent episode")
    ex.add_argument(
        "--format",
        required=True,
        choices=("claude", "codex", "gemini"),
        help="which client to imitate",
    )
    ex.add_argument("--model", default=None, help="model name written into the records")
    ex.add_argument(
        "--cwd",
        "--cd",
        dest="cwd",
        default=None,
        help="workspace (default $PAIRLAB_WORKSPACE, then cwd)",
    )
    ex.add_argument(
        "--output-format",
        choices=("text", "json"),
        default=None,
        help="gemini stdout format (default json); claude/codex always print text",
    )
    ex.add_argument("prompt", nargs="+", help="the task prompt")
    q = sub.add_parser("quota", help="print the simulated quota (as of now)")
    q.add_argument("--account-dir", default=None, help="default $PAIRLAB_SIM_ACCOUNT_DIR")
    return parser


def _quota_command(account_dir: str | None, environ: dict[str, str]) -> int:
    directory = account_dir or environ.get("PAIRLAB_SIM_ACCOUNT_DIR")
    if not directory:
        print(
            "simclient: PAIRLAB_SIM_ACCOUNT_DIR is not set (and no --account-dir)", file=sys.stderr
        )
        return USAGE_ERROR
    state = read_quota(Path(directory))
    if state is None:
        print(f"simclient: no quota file in {directory}", file=sys.stderr)
        return 1
    fixed_now = environ.get("PAIRLAB_SIM_NOW")
    now = parse_ts(fixed_now) if fixed_now else datetime.now(UTC)
    print(json.dumps(roll_windows(state, now), indent=2, sort_keys=True))
    return 0


def run_cli(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    environ = dict(os.environ)
    if args.command == "quota":
        return _quota_command(args.account_dir, environ)

    prompt = " ".join(args.prompt)
    env = read_episode_env(environ, prompt, args.cwd)
    seen = scan_home(env)
    print(seen.startup_line(), file=sys.stderr, flush=True)
    fault = environ.get("PAIRLAB_SIM_FAULT", "")
    if fault:
        if fault not in FAULTS:
            print(
                f"simclient: unknown PAIRLAB_SIM_FAULT '{fault}' (known: {', '.join(FAULTS)})",
                file=sys.stderr,
            )
            return USAGE_ERROR
        return trigger_fault(fault, env.state_dir)
    try:
        config = load_config(environ)
        stdout = run_episode(env, config, prompt, args.format, args.model, args.output_format, seen)
    except ConfigError as exc:
        print(f"simclient: {exc}", file=sys.stderr)
        return USAGE_ERROR
    sys.stdout.write(stdout)
    sys.stdout.flush()
    return 0

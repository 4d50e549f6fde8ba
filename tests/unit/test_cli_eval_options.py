"""`pairlab eval`'s options come from the flow's parameter model: one source of
defaults, help and bounds (issue 25), every option name still working."""

from __future__ import annotations

import inspect
from typing import Any, get_args

import pytest
import typer
from typer.main import get_command

from flows.params import EvidenceEvalParams
from pairlab.cli.model_options import field_default
from tests.support import cli_exit

OWN_FIELDS = (
    "suite",
    "profile",
    "repetitions",
    "backend",
    "store",
    "model",
    "seed",
    "concurrency",
    "min_pairs",
    "run_id",
    "include_transcript",
    "keep_workspaces",
    "on_secret",
    "work_dir",
    "quota_interval_episodes",
    "quota_interval_s",
    "holdout_share",
)
OPTION_NAMES = [
    "--suite",
    "--profile",
    "--repetitions",
    "--backend",
    "--store",
    "--task",
    "--arms",
    "--model",
    "--seed",
    "--concurrency",
    "--min-pairs",
    "--run-id",
    "--plan",
    "--include-transcript",
    "--keep-workspaces",
    "--on-secret",
    "--work-dir",
    "--unrelated-concurrent-use",
    "--quota-interval-episodes",
    "--quota-interval-s",
    "--holdout-share",
    "--warm-harvest-task",
    "--emulator-fault",
    "--emulator-wrong-probability",
    "--json",
]


def _eval_params() -> dict[str, Any]:
    from pairlab.cli import run

    app = typer.Typer()
    run.register(app)
    command = get_command(app)
    eval_cmd = command.commands["eval"]  # type: ignore[attr-defined]
    return {p.name: p for p in eval_cmd.params}


def test_every_option_name_of_eval_is_kept() -> None:
    names = {opt for p in _eval_params().values() for opt in p.opts}
    assert set(OPTION_NAMES) <= names


def test_defaults_help_and_bounds_are_the_models() -> None:
    params = _eval_params()
    for name in OWN_FIELDS:
        field = EvidenceEvalParams.model_fields[name]
        option = params[name]
        assert option.default == field_default(EvidenceEvalParams, name), name
        assert option.help is not None and option.help.startswith(str(field.description)), name
        bounds = {type(m).__name__: m for m in field.metadata}
        assert option.min == (bounds["Ge"].ge if "Ge" in bounds else None), name
        assert option.max == (bounds["Le"].le if "Le" in bounds else None), name
    # no --arms: the baseline and every arm the intervention supports (the model's
    # default, an empty list, resolved by planned_arms when the flow plans)
    assert params["arms"].default == ""
    assert "every arm the intervention supports" in str(params["arms"].help)
    assert field_default(EvidenceEvalParams, "arms") == []


def test_literal_fields_name_their_choices() -> None:
    params = _eval_params()
    for name in ("backend", "on_secret"):
        choices = get_args(EvidenceEvalParams.model_fields[name].annotation)
        assert all(c in str(params[name].help) for c in choices)


@pytest.mark.parametrize(
    "args",
    [
        ["--repetitions", "201"],  # the model's le=200, formerly not a CLI bound
        ["--concurrency", "0"],
        ["--holdout-share", "1.5"],
        ["--backend", "cloud"],  # checked by the model: invalid input, exit 2
        ["--unrelated-concurrent-use", "maybe"],
    ],
)
def test_out_of_bounds_values_are_refused_before_any_run(args: list[str]) -> None:
    assert cli_exit(["eval", *args, "--store", "/nonexistent/never-written"]) == 2


def test_command_signature_is_keyword_options() -> None:
    from pairlab.cli.model_options import command_with

    def body(**options: Any) -> None:
        del options

    command = command_with(body, [], "doc")
    assert inspect.signature(command).parameters == {}
    assert command.__doc__ == "doc"

"""The forms an operator fills in the Prefect UI (issue 19, items 3 and 4): the deployments'
run forms (typed choices from the catalog and runner profiles, units, no None noise,
required fields) and the canary's approval form (budget with each window's share and a
warning, a required budget acknowledgement)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from flows.canary.approval import CanaryApproval, approval_description
from flows.canary.manifest import budget_lines
from flows.deployments import build_deployments, form_choices
from flows.form_schema import drop_none
from flows.params import CanaryTrialParams, EvidenceEvalParams
from pairlab.core.canary import Budget
from pairlab.core.schemas.quota import QuotaObservation


@pytest.fixture(scope="module")
def deployments() -> list[Any]:
    return build_deployments()


@pytest.fixture(scope="module")
def schemas(deployments: list[Any]) -> dict[str, dict[str, Any]]:
    return {d.name: d._parameter_openapi_schema.model_dump(exclude_unset=True) for d in deployments}


def _walk(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += _walk(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk(value)
    return found


def test_choices_come_from_the_catalog_and_runner_profiles(
    schemas: dict[str, dict[str, Any]],
) -> None:
    choices = form_choices()
    assert "core" in choices.suites and "fix-median" in choices.tasks
    assert {"sim", "claude", "codex"} <= set(choices.profiles)
    eval_props = schemas["evidence-eval"]["definitions"]["EvidenceEvalParams"]["properties"]
    assert eval_props["suite"]["enum"] == list(choices.suites)
    assert eval_props["profile"]["enum"] == list(choices.profiles)
    assert eval_props["task_filter"]["items"]["enum"] == list(choices.tasks)
    # the intervention is a drop-down of the shipped manifests, the reference by default
    assert "reference" in choices.interventions
    assert eval_props["intervention"]["enum"] == list(choices.interventions)
    assert eval_props["intervention"]["default"] == "reference"
    canary_props = schemas["canary-trial"]["definitions"]["CanaryTrialParams"]["properties"]
    # a canary compares simulator revisions: no emulator (real CLI) profile is offered
    assert "sim" in canary_props["profile"]["enum"]
    assert "claude" not in canary_props["profile"]["enum"]


def test_no_none_noise_units_and_required_fields(schemas: dict[str, dict[str, Any]]) -> None:
    for name, schema in schemas.items():
        nodes = _walk(schema)
        # only an optional section (a nested model or None) keeps its None branch
        sections = [n for n in nodes if {"type": "null"} in n.get("anyOf", [])]
        for node in sections:
            (section,) = [b for b in node["anyOf"] if b != {"type": "null"}]
            assert "$ref" in section, (name, node)
        assert sum(n.get("type") == "null" for n in nodes) == len(sections), name
        for node in nodes:
            title = str(node.get("title", ""))
            assert not title.endswith((" S", " Ms")), (name, title)
    definitions = schemas["evidence-eval"]["definitions"]
    dispatch = definitions["DispatchParams"]["properties"]
    assert dispatch["lease_s"]["title"] == "Lease (seconds)"
    assert dispatch["poll_s"]["title"] == "Poll (seconds)"
    assert "`pairlab-episodes-<account>`" in dispatch["episode_limit"]["description"]
    eval_def = definitions["EvidenceEvalParams"]
    assert {"suite", "profile", "repetitions", "store"} <= set(eval_def["required"])
    # the arms: empty is the default (every arm the intervention supports), so an emptied
    # field the v1 UI sends as missing is that default, not "'arms' is a required property"
    assert "arms" not in eval_def["required"]
    assert "form_optional" not in eval_def["properties"]["arms"]
    # nullable fields stay optional, without a None default
    for optional in ("min_pairs", "run_id", "model", "study_plan"):
        assert optional not in eval_def["required"]
        assert "default" not in eval_def["properties"][optional]
    # an optional section (the warm stratum) stays switchable off, and is off
    warm = eval_def["properties"]["warm"]
    assert {"type": "null"} in warm["anyOf"] and "warm" not in eval_def["required"]
    harvest = definitions["WarmStratumParams"]["properties"]["harvest_task"]
    assert harvest["enum"] == list(form_choices().tasks)


def test_deployment_parameters_fill_the_form_and_validate(
    deployments: list[Any], schemas: dict[str, dict[str, Any]]
) -> None:
    for deployment in deployments:
        params = deployment.parameters
        assert None not in [v for node in _walk(params) for v in node.values()]
        if deployment.name not in ("compare-artifact", "audit-savings"):  # paths: no default
            # what the server enforces on a run created from the form
            jsonschema.validate(params, schemas[deployment.name])
    assert drop_none({"a": None, "b": [{"c": None, "d": 1}]}) == {"b": [{"d": 1}]}
    # an empty text field the form sends means "not set"
    assert EvidenceEvalParams(run_id="", model=" ").run_id is None
    assert CanaryTrialParams(run_id="").run_id is None


def test_invalid_choices_are_refused_by_the_form_schema(
    deployments: list[Any], schemas: dict[str, dict[str, Any]]
) -> None:
    schema = schemas["evidence-eval"]
    params = {"params": {**deployments[0].parameters["params"], "suite": "nope"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(params, schema)
    params["params"].update(suite="core", task_filter=["no-such-task"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(params, schema)


def _budget(per_episode: int, episodes: int = 16) -> Budget:
    total = episodes * per_episode
    sizes: dict[str, int | None] = {"five-hour": 300_000, "seven-day": 30_000_000}
    return Budget(
        episodes=episodes,
        estimated_tokens_per_episode=per_episode,
        estimated_tokens_total=total,
        window_budget_tokens=sizes,
        estimated_quota_percent={w: round(100 * total / s, 1) for w, s in sizes.items() if s},
    )


def test_budget_shows_each_windows_share_and_warns_beyond_what_remains() -> None:
    over = "\n".join(budget_lines(_budget(20_000), sim=True))
    # the default trial: 16 x 20,000 = 320,000 tokens, 106.7% of the five-hour window
    assert "five-hour window (300,000 tokens): **106.7%** of the window" in over
    assert "WARNING: exceeds the remaining window by 6.7 points" in over
    assert over.count("WARNING") == 1  # the seven-day window has room
    fits = "\n".join(budget_lines(_budget(1_000), sim=True))
    assert "WARNING" not in fits and "5.3%" in fits
    unknown = budget_lines(
        Budget(
            episodes=2,
            estimated_tokens_per_episode=1,
            estimated_tokens_total=2,
            window_budget_tokens={"five-hour": None},
            estimated_quota_percent={"five-hour": None},
        ),
        sim=False,
    )
    assert "cannot be checked" in unknown[-1]


def test_approval_form_requires_the_budget_acknowledgement() -> None:
    schema = CanaryApproval.model_json_schema()
    assert {"approve", "approver", "budget_acknowledged"} <= set(schema["required"])
    assert "note" not in schema["required"]
    ok_reject = {"approve": False, "approver": "ops-bob", "budget_acknowledged": False}
    jsonschema.validate(ok_reject, schema)
    with pytest.raises(jsonschema.ValidationError):  # approving without acknowledging
        jsonschema.validate({**ok_reject, "approve": True}, schema)
    with pytest.raises(jsonschema.ValidationError):  # not answered at all
        jsonschema.validate({"approve": False, "approver": "ops-bob"}, schema)


@pytest.mark.parametrize(
    "pasted",
    [
        "sk-ant-oat01-" + "Ab1" * 10,
        "my key is sk-proj-" + "x9" * 12 + ", ok",
        "Authorization: Bearer abcdefghijklmnop1234",
        "AKIA" + "A1B2C3D4E5F6G7H8",
    ],
)
def test_a_credential_pasted_into_the_approval_is_refused_and_never_echoed(pasted: str) -> None:
    """The server validates the Resume input with the schema before storing it (Prefect's
    own validator, as on resume): a credential in the approver or the note is refused by
    field, and the refusal does not repeat it; the flow's model refuses it too."""
    from prefect.utilities.schema_tools import ValidationError, validate

    schema = CanaryApproval.model_json_schema()
    ok = {"approve": True, "approver": "ops-bob", "note": "", "budget_acknowledged": True}
    validate(ok, schema, raise_on_error=True)
    validate({**ok, "note": "sk- is a prefix; see sk-ant- docs"}, schema, raise_on_error=True)
    for field in ("approver", "note"):
        with pytest.raises(ValidationError) as refused:
            validate({**ok, field: pasted}, schema, raise_on_error=True)
        assert f"field {field!r}" in str(refused.value) and "no credential here" in str(
            refused.value
        )
        assert pasted not in str(refused.value)
        with pytest.raises(ValueError, match="looks like a credential") as model:
            CanaryApproval.model_validate({**ok, field: pasted})
        assert pasted not in str(model.value)


def test_approval_description_carries_the_budget() -> None:
    from flows.canary.manifest import canary_profile, freeze_manifest
    from pairlab.adapters.episode.io import load_eval_inputs
    from pairlab.core.schedule import plan_canary

    params = CanaryTrialParams()
    suite, profile = load_eval_inputs(params.suite, params.profile)
    schedule = plan_canary(params.task_filter, params.repetitions, params.seed, "t", params.strata)
    manifest = freeze_manifest.fn(params, "t", suite, canary_profile(profile), schedule)
    text = approval_description(manifest)
    assert "16 episodes" in text and "106.7%" in text and "WARNING" in text


# What the v1 UI keeps of a property when it asks the server to validate the form
# (its SchemaProperty mapping); every other keyword is dropped before validation.
UI_KEPT = {
    "position", "block_type_slug", "$ref", "anyOf", "allOf", "example", "default", "const",
    "description", "enum", "format", "items", "prefixItems", "properties", "required", "title",
    "type", "maxItems", "minItems",
}  # fmt: skip


def _as_the_ui_sends(node: Any) -> Any:
    if isinstance(node, dict):
        kept = {k: v for k, v in node.items() if k in UI_KEPT}
        for key in ("items", "properties"):
            if isinstance(kept.get(key), dict):
                kept[key] = (
                    {k: _as_the_ui_sends(v) for k, v in kept[key].items()}
                    if key == "properties"
                    else _as_the_ui_sends(kept[key])
                )
        return kept
    return node


def _ui_errors(schema: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """Prefect's own validation of the form, on the schema as the v1 UI sends it."""
    from prefect.utilities.schema_tools.validation import build_error_obj, validate

    sent = {
        **schema,
        "properties": {k: _as_the_ui_sends(v) for k, v in schema["properties"].items()},
        "definitions": {k: _as_the_ui_sends(v) for k, v in schema["definitions"].items()},
    }
    errors = build_error_obj(validate(values, sent, raise_on_error=False))
    return [str(e) for e in _walk(errors) for e in e.get("errors", []) if isinstance(e, str)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"repetitions": -1}, "-1 is less than the minimum of 1"),
        ({"concurrency": 0}, "0 is less than the minimum of 1"),
        ({"holdout_share": 2}, "2 is greater than the maximum of 1"),
        ({"arms": ["optimizer", "full"]}, "does not contain items matching"),
        ({"arms": ["baseline"]}, "is too short"),
        ({"store": ""}, "'' should be non-empty"),
    ],
)
def test_impossible_values_are_refused_beside_the_field_by_the_forms_own_check(
    deployments: list[Any], schemas: dict[str, dict[str, Any]], change: dict[str, Any], message: str
) -> None:
    schema = schemas["evidence-eval"]
    good = {"params": dict(deployments[0].parameters["params"])}
    assert good["params"]["arms"] == []  # the default: the form's check lets it through
    assert _ui_errors(schema, good) == []
    missing = {"params": {k: v for k, v in good["params"].items() if k != "arms"}}
    assert _ui_errors(schema, missing) == []  # emptied, sent as missing: the default too
    assert EvidenceEvalParams.model_validate(missing["params"]).arms == []
    bad = {"params": {**good["params"], **change}}
    errors = _ui_errors(schema, bad)
    assert any(message in e for e in errors), errors
    # and the flow's own model refuses it too (API callers, the command line)
    with pytest.raises(ValueError):
        EvidenceEvalParams.model_validate(bad["params"])


PASTED = "sk-ant-oat01-" + "Ab1" * 10


def _with(params: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(params)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("deployment", "path", "field"),
    [
        ("evidence-eval", ("model",), "params.model"),
        ("evidence-eval", ("store",), "params.store"),
        ("evidence-eval", ("task_filter", 0), "params.task_filter[0]"),
        ("evidence-eval", ("suite",), "params.suite"),
        ("evidence-eval", ("dispatch", "deployment"), "params.dispatch.deployment"),
        ("evidence-eval", ("work_dir",), "params.work_dir"),
        ("canary-trial", ("review_dimensions", 0), "params.review_dimensions[0]"),
        ("canary-trial", ("effort",), "params.effort"),
        ("canary-trial", ("task_filter", 1), "params.task_filter[1]"),
        ("canary-trial", ("store",), "params.store"),
    ],
)
def test_a_credential_in_a_run_form_field_is_refused_by_field_and_never_echoed(
    deployments: list[Any],
    schemas: dict[str, dict[str, Any]],
    deployment: str,
    path: tuple[str | int, ...],
    field: str,
) -> None:
    """The server validates a run's parameters with the deployment's schema before it stores
    them (Prefect's own validator, as create_flow_run_from_deployment calls it): a credential
    in any text, nested or a list's item, is refused naming the field, never the value; the
    v1 UI's own check (its copy of the schema) says it beside the field too."""
    from prefect.utilities.schema_tools import ValidationError, validate

    schema = schemas[deployment]
    params = next(d.parameters for d in deployments if d.name == deployment)
    if path == ("effort",) or path == ("model",):
        params = _with(params, ("params", *path), "own-model")  # a field left out by default
    validate(params, schema, raise_on_error=True)
    pasted = _with(params, ("params", *path), f"key {PASTED} ok")
    with pytest.raises(ValidationError) as refused:
        validate(pasted, schema, raise_on_error=True)
    assert str(refused.value) == (
        f"Validation failed for field {field!r}. Failure reason: "
        "'no credential here (register it with pairlab account add)' was expected"
    )
    ui = _ui_errors(schema, pasted)
    assert any("no credential here" in e for e in ui), ui
    if field not in ("params.suite", "params.task_filter[0]", "params.task_filter[1]"):
        # a choice's own "... is not one of" is listed too (a drop-down: nothing is typed)
        assert all(PASTED not in e for e in ui), ui


def test_every_text_of_the_run_forms_refuses_a_credential(
    deployments: list[Any], schemas: dict[str, dict[str, Any]]
) -> None:
    """No string of any run form escapes the rule: every one carries the refusal (nested
    sections, list items, choices, the emulator's fault rules); a text that only mentions a
    prefix is accepted."""
    from flows.form_schema import NO_CREDENTIAL

    strings = 0
    for name, schema in schemas.items():
        for node in _walk(schema):
            if node.get("type") == "string" and "pattern" not in node:  # not the refusal's if
                strings += 1
                refusals = [a for a in node.get("allOf", []) if "if" in a]
                assert [a["then"] for a in refusals] == [{"const": NO_CREDENTIAL}], (name, node)
    assert strings > 40
    mentions = _with(deployments[0].parameters, ("params", "model"), "sk-ant- docs, sk-proj-")
    jsonschema.validate(mentions, schemas["evidence-eval"])


def test_concurrent_use_is_tri_state_and_unknown_when_untouched(
    deployments: list[Any], schemas: dict[str, dict[str, Any]]
) -> None:
    prop = schemas["evidence-eval"]["definitions"]["EvidenceEvalParams"]["properties"][
        "unrelated_concurrent_use"
    ]
    assert prop["enum"] == ["unknown", "no", "yes"] and prop["type"] == "string"
    by_name = {d.name: d.parameters["params"] for d in deployments}
    assert by_name["evidence-eval"]["unrelated_concurrent_use"] == "unknown"
    # the simulator canary's fresh account: the deployment asserts no other use
    assert by_name["canary-trial"]["unrelated_concurrent_use"] == "no"
    words = {"unknown": None, "no": False, "yes": True}
    for word, value in words.items():
        assert EvidenceEvalParams(unrelated_concurrent_use=word).unrelated_concurrent_use is value
        assert CanaryTrialParams(unrelated_concurrent_use=word).unrelated_concurrent_use is value
    assert EvidenceEvalParams().unrelated_concurrent_use is None


def test_the_budget_says_when_whole_percent_windows_cannot_resolve_the_quota() -> None:
    # the default trial: ~20,000 tokens a run of a 300,000-token window = 6.7 points a run
    coarse = "\n".join(budget_lines(_budget(20_000), sim=True))
    assert "**Quota resolution**: one run is ~6.7 points of the five-hour window" in coarse
    assert "(±1 point = ±15% of a run)" in coarse
    assert "identical trials may reach different quota verdicts" in coarse
    # a run that spans 20 points or more of the smallest window is resolved to 5%
    assert "Quota resolution" not in "\n".join(budget_lines(_budget(60_000), sim=True))


def test_work_pool_deployments_get_the_same_form(deployments: list[Any]) -> None:
    """`pairlab forms` (after `prefect deploy`) builds the form `pairlab serve` serves, from
    the flow's raw schema, and leaves a deployment's parameters as they are."""
    from prefect.utilities.callables import parameter_schema

    from flows.deployments import form_flows
    from flows.form_schema import polish_schema, with_form_defaults

    choices, flows = form_choices(), form_flows()
    for deployment in deployments:
        served = deployment._parameter_openapi_schema.model_dump()
        raw = parameter_schema(flows[deployment.flow_name]).model_dump()
        assert polish_schema(raw, choices) == served, deployment.name
        params = deployment.parameters
        assert with_form_defaults(served, drop_none(params)) == params


def test_work_pool_deployments_parameters_are_completed_so_the_form_can_submit() -> None:
    """infra/prefect.yaml gives evidence-eval six fields and canary-trial none; Prefect's
    form starts from those and sends every other required field as missing, so the server
    refused the stack's form far above Submit (found by the stack's chromium test).
    `pairlab forms` completes them from the flow's model: the server's own validation of
    the form's schema then passes, the given values kept; a model with fields that have no
    default (compare-artifact's path) is left for the operator, invalid values refused."""
    from pathlib import Path

    import yaml
    from prefect.utilities.callables import parameter_schema
    from prefect.utilities.schema_tools.validation import validate

    from flows.deployments import complete_parameters, form_flows
    from flows.form_schema import polish_schema, with_form_defaults
    from pairlab.core.errors import InvalidInputError

    spec = yaml.safe_load((Path(__file__).parents[2] / "infra" / "prefect.yaml").read_text())
    given = {d["name"]: d.get("parameters") or {} for d in spec["deployments"]}
    choices, flows = form_choices(), form_flows()

    def errors(flow: str, parameters: dict[str, Any]) -> list[str]:
        schema = polish_schema(parameter_schema(flows[flow]).model_dump(), choices)
        sent = with_form_defaults(schema, drop_none(parameters))
        return [e.message for e in validate(sent, schema, raise_on_error=False)]

    assert "'suite' is a required property" in errors("evidence-eval", given["evidence-eval"])
    assert errors("canary-trial", given["canary-trial"])
    for flow in ("evidence-eval", "canary-trial", "certify-clients"):
        assert errors(flow, complete_parameters(flows[flow], given[flow])) == [], flow
    complete = complete_parameters(flows["evidence-eval"], given["evidence-eval"])["params"]
    for name, value in given["evidence-eval"]["params"].items():
        if name != "dispatch":
            assert complete[name] == value, name
    assert complete["dispatch"].items() >= given["evidence-eval"]["params"]["dispatch"].items()
    # the arms' default: empty = the baseline and every arm the intervention supports
    assert complete["arms"] == EvidenceEvalParams().model_dump(mode="json")["arms"] == []
    # twice is once (the stack's deploy service runs `pairlab forms` on every start)
    again = complete_parameters(
        flows["evidence-eval"], {"params": {**complete, "unrelated_concurrent_use": "unknown"}}
    )
    assert drop_none(again) == drop_none({"params": complete})
    left = complete_parameters(flows["compare-artifact"], {})
    assert left == {}  # its artifact path has no default: the operator's to fill in
    # as `pairlab serve` registers it: given empty, left as it is (was: refused)
    assert complete_parameters(flows["compare-artifact"], {"params": {}}) == {"params": {}}
    with pytest.raises(InvalidInputError, match="repetitions"):
        complete_parameters(flows["evidence-eval"], {"params": {"repetitions": 0}})


def _reading(window: str, used: float | None) -> QuotaObservation:
    return QuotaObservation(
        provider="claude", window=window, used_percent=used, precision_percent=1.0,
        observed_at=datetime(2026, 12, 5, tzinfo=UTC), source="claude-oauth-usage",
    )  # fmt: skip


def test_the_approval_shows_each_windows_share_of_what_remains_now() -> None:
    """Before the pause the account's windows are read: the trial's expected share of what
    remains (the whole-percent reading at its lower bound), a warning beyond it."""
    from flows.canary.manifest import canary_profile, freeze_manifest
    from pairlab.adapters.episode.io import load_eval_inputs
    from pairlab.core.schedule import plan_canary

    budget = _budget(1_000)  # 5.3% of the five-hour window, 0.1% of the seven-day one
    roomy = "\n".join(
        budget_lines(
            budget, sim=True, windows=[_reading("five-hour", 40.0), _reading("seven-day", 3.0)]
        )
    )
    assert "read now: 40% used, at least 59% remaining" in roomy
    assert "the trial would use **9% of what remains**" in roomy and "WARNING" not in roomy
    tight = "\n".join(budget_lines(budget, sim=True, windows=[_reading("five-hour", 96.0)]))
    assert "at least 3% remaining" in tight
    assert "WARNING: exceeds the remaining window by 2.3 points" in tight
    assert tight.count("WARNING") == 1  # the seven-day window was not read: not warned on
    unread = "\n".join(budget_lines(budget, sim=False, windows=[_reading("five-hour", None)]))
    assert "its use now could not be read — the share of what remains cannot be checked" in unread
    # a real subscription: the window's size in tokens is unknown; the operator's estimate
    # in points per episode gives the expected share
    params = CanaryTrialParams(estimated_window_percent_per_episode=2.5)
    suite, profile = load_eval_inputs(params.suite, params.profile)
    schedule = plan_canary(params.task_filter, params.repetitions, params.seed, "t", params.strata)
    manifest = freeze_manifest.fn(params, "t", suite, canary_profile(profile), schedule)
    real = manifest.model_copy(
        update={
            "budget": manifest.budget.model_copy(
                update={
                    "window_budget_tokens": {"five-hour": None},
                    "estimated_quota_percent": {"five-hour": 40.0},
                }
            )
        }
    )
    text = approval_description(real, [_reading("five-hour", 70.0)], ceiling_percent=30)
    assert "**Ceiling: 30% of each window.**" in text
    assert "The window ceiling: before each AB/BA pair" in text
    # what the approver signs comes before the budget's detail and the rules
    assert (
        text.index("Ceiling: 30%")
        < text.index("five-hour window")
        < text.index("The window ceiling")
    )
    assert "Ceiling" not in approval_description(real) and "ceiling" not in (
        approval_description(real)
    )
    tokens = approval_description(real, ceiling_tokens=250_000)
    assert "**Ceiling: 250,000 billed tokens.**" in tokens
    assert "The token ceiling: before each AB/BA pair" in tokens
    assert "window ceiling" not in tokens
    on_account = real.model_copy(update={"environment": {**real.environment, "account": "own"}})
    assert "**No budget ceiling**" in approval_description(on_account)
    assert "No budget ceiling" not in approval_description(on_account, ceiling_percent=30)
    assert "five-hour window (estimated 2.5 points per episode): **40%** of the window" in text
    assert "at least 29% remaining" in text and "**138% of what remains**" in text
    assert "WARNING: exceeds the remaining window by 11.0 points" in text

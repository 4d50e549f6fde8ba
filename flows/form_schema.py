"""The run form of a served deployment, made for people (applied at deploy time).

Prefect renders a deployment's parameter JSON schema as the "Custom run" form.
Straight from pydantic it reads every field as "(Optional)", offers a type
switch with ``Property is type "None"`` for every nullable field, has titles
such as "Lease S" and accepts any text as a suite, profile or task id. Here:

* choices: ``suite``, ``profile``, ``intervention`` and ``task_filter`` become enums of
  what the catalog, runner_profiles/ and interventions/ hold when `pairlab serve` starts;
* nullable fields lose their ``null`` branch (an empty field is simply not sent,
  and the flow's default applies), and ``None`` defaults leave the parameters —
  except optional sections (a nested model or None), which keep the form's
  None/object switch so they can stay off;
* every field that is not nullable is required (the deployment's parameters fill
  them in, so a run only needs changes) -- but one marked ``form_optional``, whose empty
  value is itself a choice (the eval's arms: empty = every arm the intervention
  supports): should the v1 UI send an emptied list as missing (it does so for a
  list of items), that is the model's default too, never "'arms' is a required property";
* duration titles carry their unit: ``Lease S`` → ``Lease (seconds)``;
* bounds are refused where they are typed: the v1 UI copies only some keywords of a
  property into the schema it validates with (``minimum``, ``maximum``, ``minLength``,
  ``contains``... are dropped; ``allOf`` is passed as it is), so each bound moves into
  ``allOf`` and the form shows "-1 is less than the minimum of 1" beside the field
  instead of a Submit that silently does nothing;
* a tri-state assertion (``form_choices``: unknown / no / yes) is a drop-down of those
  words, defaulting to the first (the flow reads them as None / False / True), never a
  toggle whose untouched state asserts "no";
* a credential in any text (every string of the form, nested sections and list items
  included) is refused by the server before it stores anything (:func:`refuse_credentials`).

The flows still validate with their pydantic models; the schema only guides the form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pairlab.core.redaction import credential_regex

UNIT_SUFFIXES: Final = {"_s": "seconds", "_ms": "milliseconds"}
# keywords the v1 UI drops from a property (its schema mapping keeps only a few)
BOUND_KEYWORDS: Final = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "contains",
)
FORM_CHOICES: Final = "form_choices"
FORM_OPTIONAL: Final = "form_optional"
TRI_STATE: Final[dict[bool | None, str]] = {None: "unknown", False: "no", True: "yes"}
# What the server answers a credential pasted into a text field: a jsonschema ``const``
# failure reads "'<this>' was expected", never the value typed.
NO_CREDENTIAL: Final = "no credential here (register it with pairlab account add)"
# where a schema holds the schemas of its parts (never ``default``, ``enum``...: data)
_SUBSCHEMA_MAPS: Final = ("properties", "definitions", "$defs")
_SUBSCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS: Final = ("items", "additionalProperties")


@dataclass(frozen=True)
class Choices:
    """Enums generated from the catalog and the runner profiles."""

    suites: Sequence[str] = ()
    profiles: Sequence[str] = ()
    tasks: Sequence[str] = ()
    interventions: Sequence[str] = ()  # the shipped manifests' ids (interventions/)
    # per flow: a narrower profile list (e.g. the canary runs simulator profiles only)
    profiles_by_model: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _drop_null(prop: dict[str, Any]) -> bool:
    """``anyOf: [X, null]`` → X in place; True when the property was nullable."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list):
        return False
    rest = [b for b in branches if b != {"type": "null"}]
    if len(rest) == len(branches) or len(rest) != 1:
        return False
    if "$ref" in rest[0] or rest[0].get("type") == "object":
        # an optional section (e.g. the warm stratum): the form's None/object switch is
        # how it stays off; without it the form would send an empty, invalid object
        return True
    del prop["anyOf"]
    for key, value in rest[0].items():
        prop.setdefault(key, value)
    if prop.get("default", 0) is None:
        del prop["default"]
    return True


def _unit_title(name: str, prop: dict[str, Any]) -> None:
    for suffix, unit in UNIT_SUFFIXES.items():
        if name.endswith(suffix):
            words = name[: -len(suffix)].replace("_", " ").strip().capitalize()
            prop["title"] = f"{words} ({unit})"


def _bounds_in_all_of(prop: dict[str, Any]) -> None:
    bounds = {k: prop.pop(k) for k in BOUND_KEYWORDS if k in prop}
    if bounds:
        prop["allOf"] = [*prop.get("allOf", []), bounds]


def _form_choices(prop: dict[str, Any]) -> None:
    words = prop.pop(FORM_CHOICES, None)
    if words:
        for key in ("type", "anyOf", "default"):
            prop.pop(key, None)
        prop.update({"type": "string", "enum": list(words), "default": words[0]})


def with_form_defaults(schema: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """Deployment parameters whose tri-state fields are words: a left-out (None) value is
    ``unknown``, False ``no``, True ``yes``, so the form shows the choice selected."""
    out = dict(parameters)
    for name, prop in schema.get("properties", {}).items():
        ref = str(prop.get("$ref", ""))
        definition = schema.get("definitions", {}).get(ref.rsplit("/", 1)[-1])
        if definition is None or not isinstance(out.get(name, {}), dict):
            continue
        given = dict(out.get(name, {}))
        for key, sub in definition.get("properties", {}).items():
            if sub.get("enum") == list(TRI_STATE.values()):
                value = given.get(key)
                given[key] = TRI_STATE.get(value, value) if not isinstance(value, str) else value
        out[name] = given
    return out


def _enum(prop: dict[str, Any], values: Sequence[str]) -> None:
    if not values:
        return
    if prop.get("type") == "array":
        prop["items"] = {**prop.get("items", {}), "type": "string", "enum": list(values)}
    else:
        prop["enum"] = list(values)


def polish_definition(name: str, definition: dict[str, Any], choices: Choices) -> None:
    props: dict[str, dict[str, Any]] = definition.get("properties", {})
    required = list(definition.get("required", []))
    for prop_name, prop in props.items():
        _form_choices(prop)
        optional = bool(prop.pop(FORM_OPTIONAL, False))
        nullable = _drop_null(prop) or optional
        _unit_title(prop_name, prop)
        _bounds_in_all_of(prop)
        if isinstance(prop.get("items"), dict):
            _bounds_in_all_of(prop["items"])
        if prop_name == "suite":
            _enum(prop, choices.suites)
        elif prop_name == "profile":
            _enum(prop, choices.profiles_by_model.get(name, choices.profiles))
        elif prop_name == "intervention":
            _enum(prop, choices.interventions)
        elif prop_name in ("task_filter", "harvest_task"):
            _enum(prop, choices.tasks)
        if not nullable and prop_name not in required:
            required.append(prop_name)
    if props:
        definition["required"] = required


def credential_refusal() -> dict[str, Any]:
    """A string that holds a credential (the redaction rules' credential kinds,
    core/redaction.credential_regex) must equal :data:`NO_CREDENTIAL`: it never can, so the
    server refuses it, naming the field and never repeating the value."""
    return {
        "if": {"type": "string", "pattern": credential_regex()},
        "then": {"const": NO_CREDENTIAL},
    }


def _string_schemas(node: Any) -> list[dict[str, Any]]:
    """Every subschema of ``node`` (itself included) that is a string."""
    if not isinstance(node, dict):
        return []
    found = [node] if node.get("type") == "string" else []
    for key in _SUBSCHEMA_MAPS:
        for sub in (node.get(key) or {}).values():
            found += _string_schemas(sub)
    for key in _SUBSCHEMA_LISTS:
        for sub in node.get(key) or []:
            found += _string_schemas(sub)
    for key in _SUBSCHEMAS:
        found += _string_schemas(node.get(key))
    return found


def refuse_credentials(schema: dict[str, Any]) -> None:
    """A credential pasted into the form is refused by the Prefect server before it stores
    the flow run (issue 27, item 2): a deployment enforces its parameter schema
    (``enforce_parameter_schema``, on for `pairlab serve`'s and infra/prefect.yaml's), so
    the run is not created and its parameters are stored nowhere (the server's database, its
    API, the UI). The rule is core/accounts.refuse_credential_parameters', which the flows
    still apply as the second line (runs started from the command line).

    Every string of the schema (in place) gets :func:`credential_refusal` in its ``allOf``,
    which the v1 UI passes on when it checks the form, so the refusal shows beside the field.
    The server answers one error: the refusal is the one it picks whatever the key order
    (jsonschema's best match prefers it to a choice's "... is not one of", which repeats the
    value: its ``then`` has no ``type``), except for a choice inside an optional section
    (``warm``): there an API caller's own value comes back in the 409, and nothing is
    stored either way."""
    for string in _string_schemas(schema):
        string["allOf"] = [*string.get("allOf", []), credential_refusal()]


def polish_schema(schema: dict[str, Any], choices: Choices) -> dict[str, Any]:
    """The form schema of a flow whose parameters are pydantic models (in place; from the
    raw schema only: a second pass could not tell the fields it made optional)."""
    for name, definition in schema.get("definitions", {}).items():
        polish_definition(name, definition, choices)
    for prop in schema.get("properties", {}).values():
        _drop_null(prop)
    refuse_credentials(schema)
    return schema


def drop_none(value: Any) -> Any:
    """Deployment parameters without ``None`` values (the form shows them empty)."""
    if isinstance(value, dict):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_none(v) for v in value]
    return value

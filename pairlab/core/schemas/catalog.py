"""Task catalog entries and suites (DESIGN 5.3)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import Field, ValidationError

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel


class CommandGrader(StrictModel):
    type: Literal["command"] = "command"
    name: str = "command"
    run: list[str] = Field(min_length=1)  # argv, run in the workspace; exit 0 = pass
    timeout_s: float = Field(default=60, gt=0)


class FinalAnswerGrader(StrictModel):
    type: Literal["final_answer_includes", "final_answer_excludes"]
    name: str = "final-answer"
    values: list[str] = Field(min_length=1)


class MaxDeliveredTokensGrader(StrictModel):
    type: Literal["max_delivered_tokens"] = "max_delivered_tokens"
    name: str = "max-delivered-tokens"
    max: int = Field(ge=0)


class GraphFindingGrader(StrictModel):
    type: Literal["graph_finding"] = "graph_finding"
    name: str = "graph-finding"
    finding_id: str


Grader = Annotated[
    CommandGrader | FinalAnswerGrader | MaxDeliveredTokensGrader | GraphFindingGrader,
    Field(discriminator="type"),
]


class SeedFinding(StrictModel):
    """A finding the catalog plants in the graph of retrieval/full episodes (issue 18). The
    contract fields default to a catalog declaration; ``effect`` is the ground truth the
    scripted model plays (``useful``: it replaces the task's exploration; ``harmful``: the
    model rates it so; ``useless``: nothing changes) -- never shown to the intervention."""

    id: str
    claim: str
    anchors: list[str] = Field(default_factory=list)
    evidence: str = "declared by the task catalog"
    applicability: str = "tasks on this project"
    confidence_label: Literal["verified", "probable", "speculative"] = "probable"
    scope: Literal["project", "organization", "global"] = "project"
    invalidators: list[str] = Field(default_factory=lambda: ["an anchored file changes"])
    effect: Literal["useful", "useless", "harmful"] = "useless"


class CarriedEffect(StrictModel):
    """The scripted model's ground truth for a finding carried from another session."""

    claim: str
    effect: Literal["useful", "useless", "harmful"]


class TaskEntry(StrictModel):
    schema_version: Literal[1] = 1
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,79}$")
    family: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    fixture: str = Field(min_length=1)  # directory under catalog/fixtures/
    workspace: str = "."  # working directory inside the fixture
    benefit_expectation: Literal["positive", "neutral", "negative", "unknown"] = "unknown"
    seed_findings: list[SeedFinding] = Field(default_factory=list)
    seed_feedback: list[str] = Field(default_factory=list)
    mutate_after_seed: bool = False
    # files the scripted model reads to orient itself unless a delivered useful finding
    # covers them (issue 18: what a useful finding saves)
    explore: list[str] = Field(default_factory=list)
    # issue 18, claim 4: what the active model records with wiki_write in a full-arm
    # (harvest) session of this task, and the effects of carried findings on this task
    harvest: list[SeedFinding] = Field(default_factory=list)
    carried_effects: list[CarriedEffect] = Field(default_factory=list)
    solution: str = Field(
        min_length=1
    )  # directory under catalog/solutions/, overlaid on the workspace
    final_answer: str | None = None  # what a correct agent answers (simulator)
    graders: list[Grader] = Field(min_length=1)


ExclusionWhen = Literal[
    "infrastructure-failure-before-start",  # the CLI never started (image, volume, docker API)
    "grader-infrastructure-error",  # the grader itself could not run
]


class ExclusionRule(StrictModel):
    id: str
    when: ExclusionWhen
    description: str = Field(min_length=1)


class Suite(StrictModel):
    schema_version: Literal[1] = 1
    id: str
    description: str
    tasks: list[str] = Field(min_length=1)
    exclusion_rules: list[ExclusionRule] = Field(min_length=1)


class LoadedSuite(StrictModel):
    suite: Suite
    tasks: list[TaskEntry]
    catalog_dir: str

    def fixture_path(self, task: TaskEntry) -> Path:
        return Path(self.catalog_dir) / "fixtures" / task.fixture

    def solution_path(self, task: TaskEntry) -> Path:
        return Path(self.catalog_dir) / "solutions" / task.solution

    def select(self, task_ids: Sequence[str]) -> list[str]:
        """The suite's task ids in suite order: every one (none named), or the named ones,
        each of which must be the suite's (one line naming the strangers and the suite's
        tasks, ``unknown-task``)."""
        known = [t.id for t in self.tasks]
        strangers = [t for t in task_ids if t not in known]
        if strangers:
            raise InvalidInputError(
                f"task(s) {', '.join(strangers)} not in suite '{self.suite.id}' "
                f"(its tasks: {', '.join(known)})",
                reason=ReasonCode.UNKNOWN_TASK,
            )
        return [t for t in known if not task_ids or t in task_ids]

    def task(self, task_id: str) -> TaskEntry:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise InvalidInputError(
            f"unknown task '{task_id}' in suite '{self.suite.id}'", reason=ReasonCode.UNKNOWN_TASK
        )


def _load_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc


def _validate(model: type[StrictModel], data: object, path: Path) -> StrictModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InvalidInputError(
            f"{path}: field '{loc}': {first['msg']}", reason=ReasonCode.INVALID_CATALOG
        ) from exc


def load_task(path: Path) -> TaskEntry:
    task = _validate(TaskEntry, _load_yaml(path), path)
    assert isinstance(task, TaskEntry)
    return task


def load_suite(catalog_dir: Path, suite_id: str) -> LoadedSuite:
    """Load ``catalog/suites/<suite_id>.yaml`` and its tasks; every reference is checked."""
    path = catalog_dir / "suites" / f"{suite_id}.yaml"
    if not path.exists():
        known = sorted(
            p.stem
            for p in (catalog_dir / "suites").glob("*.yaml")
            if not p.name.endswith(".plan.yaml")  # study plans live beside their suites
        )
        raise InvalidInputError(
            f"unknown suite '{suite_id}' (known: {', '.join(known) or 'none'})",
            reason=ReasonCode.NOT_FOUND,
        )
    suite = _validate(Suite, _load_yaml(path), path)
    assert isinstance(suite, Suite)
    tasks = []
    for task_id in suite.tasks:
        task_path = catalog_dir / "tasks" / f"{task_id}.yaml"
        if not task_path.exists():
            raise InvalidInputError(
                f"{path}: task '{task_id}' has no file {task_path}", reason=ReasonCode.UNKNOWN_TASK
            )
        task = load_task(task_path)
        if task.id != task_id:
            raise InvalidInputError(
                f"{task_path}: id '{task.id}' does not match its file name",
                reason=ReasonCode.INVALID_CATALOG,
            )
        for sub, name in (("fixtures", task.fixture), ("solutions", task.solution)):
            if not (catalog_dir / sub / name).is_dir():
                raise InvalidInputError(
                    f"{task_path}: {sub[:-1]} directory '{name}' not found",
                    reason=ReasonCode.INVALID_CATALOG,
                )
        tasks.append(task)
    return LoadedSuite(suite=suite, tasks=tasks, catalog_dir=str(catalog_dir))

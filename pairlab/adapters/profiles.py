"""Loading runner profiles from ``runner_profiles/`` (DESIGN 5.2).

A profile's name is its file stem (``sim.yaml`` -> ``sim``). Loading resolves
``treatment.home_seed`` against the profile's directory, so an EpisodeSpec
carries an absolute seed path and the backends never guess where it lives, and wires
an intervention into the treated arms (``core.intervention_wiring.wire_profile``):
the one given, else ``interventions/reference.yaml`` -- a loaded profile never holds
an unwired ``{intervention}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pairlab.adapters.interventions import LoadedIntervention, load_intervention
from pairlab.adapters.paths import profiles_dir
from pairlab.core.errors import InvalidInputError, PairlabError, ReasonCode
from pairlab.core.intervention_wiring import wire_profile
from pairlab.core.schemas.intervention_manifest import DEFAULT_INTERVENTION
from pairlab.core.schemas.profile import RunnerProfile, load_profile


@dataclass(frozen=True)
class ProfileFile:
    """One profile file: loaded, or refused with the error that names the field."""

    name: str
    path: Path
    profile: RunnerProfile | None
    error: PairlabError | None


def resolve_profile(profile: RunnerProfile, base_dir: Path) -> RunnerProfile:
    seed = profile.treatment.home_seed
    if seed is None or Path(seed).is_absolute():
        return profile
    resolved = (base_dir / seed).resolve()
    if not resolved.is_dir():
        raise InvalidInputError(
            f"profile '{profile.client}': field 'treatment.home_seed': directory {resolved} not found",
            reason=ReasonCode.INVALID_PROFILE,
        )
    treatment = profile.treatment.model_copy(update={"home_seed": str(resolved)})
    return profile.model_copy(update={"treatment": treatment})


def load_profile_file(path: Path, intervention: LoadedIntervention | None = None) -> RunnerProfile:
    """The profile at ``path``, its home seed resolved and ``intervention`` (default:
    the reference) wired into its treated arms."""
    wired = intervention or load_intervention(DEFAULT_INTERVENTION)
    return wire_profile(resolve_profile(load_profile(path), path.parent), wired.manifest)


def profile_paths(directory: Path | None = None) -> list[Path]:
    base = profiles_dir(directory)
    if not base.is_dir():
        raise InvalidInputError(
            f"runner profiles directory {base} not found", reason=ReasonCode.NOT_FOUND
        )
    return sorted(p for p in base.glob("*.yaml") if p.is_file())


def scan_profiles(
    directory: Path | None = None, intervention: LoadedIntervention | None = None
) -> list[ProfileFile]:
    """Every profile file, each loaded (``intervention`` wired) or with its refusal (for
    ``certify``)."""
    found = []
    for path in profile_paths(directory):
        try:
            found.append(ProfileFile(path.stem, path, load_profile_file(path, intervention), None))
        except PairlabError as exc:
            found.append(ProfileFile(path.stem, path, None, exc))
    return found


def load_named_profile(
    name: str, directory: Path | None = None, intervention: LoadedIntervention | None = None
) -> RunnerProfile:
    paths = {p.stem: p for p in profile_paths(directory)}
    if name not in paths:
        raise InvalidInputError(
            f"unknown runner profile '{name}' (known: {', '.join(sorted(paths)) or 'none'})",
            reason=ReasonCode.UNKNOWN_PROFILE,
        )
    return load_profile_file(paths[name], intervention)

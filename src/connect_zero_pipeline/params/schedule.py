"""Schedules: a recipe that changes along the run, generation by generation.

The sections a generation's nodes read (``selfplay``, ``train``) may hold a ``schedule``: from
generation ``k`` on, the keys it names take the values it gives, over the section's own::

    selfplay:
      mcts: {sims: 16}
      schedule:
        13: {mcts: {sims: 32}}     # generations 13 on: 32 simulations
        25: {mcts: {sims: 64}}     # 25 on: 64

Phases apply in the order of their first generation, each over the section as the ones
before it left it (:func:`at_generation`). A phase is validated with its section when the
run's parameters are parsed, before any work: a bad key or value is named with its phase
(``selfplay.schedule.13.mcts.sims``); a phase may not name ``node`` (where a stage runs is not
the recipe) nor ``schedule``. ``train.buffer_gens`` in a phase widens or narrows the replay
window from that generation on, which the DAG wires (``pipelines/alphazero``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from ..core.config import from_params, is_int

T = TypeVar("T")

NOT_SCHEDULED = ("node", "schedule")
"""Keys a phase may not name."""


def normalise(schedule: Any, section: str) -> dict[int, dict[str, Any]]:
    """``schedule`` as ``{first generation: phase}`` in order (a generation given as text,
    ``--params selfplay.schedule.13.mcts.sims=32``, is read as its number).

    Raises:
        ValueError: naming ``<section>.schedule`` (or its phase) for what is not a schedule.
    """
    if not isinstance(schedule, Mapping):
        raise ValueError(f"invalid parameter: {section}.schedule must be a mapping of first "
                         f"generations to the keys they change, got {schedule!r}")  # fmt: skip
    phases: dict[int, dict[str, Any]] = {}
    for key, phase in schedule.items():
        first = int(key) if isinstance(key, str) and key.strip().isdigit() else key
        if not is_int(first) or first < 1:
            raise ValueError(f"invalid parameter: {section}.schedule.{key} must be keyed by a "
                             f"generation, an integer >= 1, got {key!r}")  # fmt: skip
        if not isinstance(phase, Mapping) or not phase:
            raise ValueError(f"invalid parameter: {section}.schedule.{first} must be a mapping "
                             f"of {section}'s keys to their values from generation {first} on, "
                             f"got {phase!r}")  # fmt: skip
        for name in NOT_SCHEDULED:
            if name in phase:
                raise ValueError(f"invalid parameter: {section}.schedule.{first}.{name}: a "
                                 f"schedule changes the recipe, not {name!r}")  # fmt: skip
        phases[first] = dict(phase)
    return dict(sorted(phases.items()))


def at_generation(config: T, generation: int, section: str) -> T:
    """Section ``config`` (one with a ``schedule``) as generation ``generation`` runs it: every
    phase that starts at or before it applied in order, its ``schedule`` empty.

    Raises:
        ValueError: naming ``<section>.schedule.<k>.<key>`` for a bad key or value.
    """
    phases = config.schedule
    now = dataclasses.replace(config, schedule={})
    for first, phase in phases.items():
        if first > generation:
            break
        now = from_params(type(now), phase, f"{section}.schedule.{first}", now)
    return now


def check_phases(config: Any, section: str) -> None:
    """Build ``config`` at every phase of its schedule (its ``__post_init__`` calls this once
    the schedule is normalised): every phase's keys and values are checked at the start."""
    for first in config.schedule:
        at_generation(config, first, section)


def _deep(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        nested = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = _deep(out[key], value) if nested else value
    return out


def scheduled_params(params: Mapping[str, Any], generation: int, section: str) -> dict[str, Any]:
    """A section's parameter mapping as generation ``generation`` runs it, its schedule left
    out: what that generation's MLflow run records (:func:`at_generation` builds the same
    values into the section's config)."""
    plain = {k: v for k, v in params.items() if k != "schedule"}
    for first, phase in normalise(params.get("schedule") or {}, section).items():
        if first <= generation:
            plain = _deep(plain, phase)
    return plain

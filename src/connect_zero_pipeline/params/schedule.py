"""Schedules: a recipe that changes along the run, generation by generation.

The sections a generation's nodes read (``selfplay``, ``train``) may hold a ``schedule``: from
generation ``k`` on, the keys it names take the values it gives, over the section's own::

    selfplay:
      mcts: {sims: 16}
      schedule:
        13: {mcts: {sims: 32}}     # generations 13 on: 32 simulations
        25: {mcts: {sims: 64}}     # 25 on: 64

Phases apply in the order of their first generation, each over the section as the ones
before it left it (:meth:`Scheduled.at`). A phase is validated with its section when the
run's parameters are parsed, before any work: a bad key or value is named with its phase
(``selfplay.schedule.13.mcts.sims``); a phase may not name ``node`` (where a stage runs is not
the recipe) nor ``schedule``. ``train.buffer_gens`` in a phase widens or narrows the replay
window from that generation on, which the DAG wires (``pipelines/alphazero``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.config import from_params, is_int, merged

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


@dataclass(frozen=True)
class Scheduled:
    """A section with a ``schedule``: the first base of ``selfplay``'s and ``train``'s params,
    whose ``__post_init__`` runs the section's own checks, then builds every phase."""

    SECTION = ""  # the section's name, in the messages (no annotation: not a field)

    schedule: dict[int, dict[str, Any]] = field(default_factory=dict)
    """From generation ``k`` on, the keys a phase names take its values (``{13: {...}}``;
    :mod:`.schedule`): the recipe along the run. Empty: every generation runs the section."""

    def __post_init__(self):
        super().__post_init__()  # the section's own checks
        object.__setattr__(self, "schedule", normalise(self.schedule, self.SECTION))
        for first in self.schedule:  # every phase built, so checked, at the run's start
            self.at(first)

    def at(self, generation: int) -> Scheduled:
        """The section as generation ``generation`` runs it: every phase that starts at or
        before it applied in order, its ``schedule`` empty.

        Raises:
            ValueError: naming ``<section>.schedule.<k>.<key>`` for a bad key or value.
        """
        now = dataclasses.replace(self, schedule={})
        for first, phase in self.schedule.items():
            if first > generation:
                break
            now = from_params(type(now), phase, f"{self.SECTION}.schedule.{first}", now)
        return now


def scheduled_params(params: Mapping[str, Any], generation: int, section: str) -> dict[str, Any]:
    """A section's parameter mapping as generation ``generation`` runs it, its schedule left
    out: what that generation's MLflow run records (:meth:`Scheduled.at` builds the same
    values into the section's config)."""
    plain = {k: v for k, v in params.items() if k != "schedule"}
    for first, phase in normalise(params.get("schedule") or {}, section).items():
        if first <= generation:
            plain = merged(plain, phase)
    return plain

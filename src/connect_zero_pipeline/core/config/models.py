"""Networks as configs: the presets, an architecture checked and counted before anything is
built (:func:`resolve_config`), and the ``model`` section (:class:`ModelSpec`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..board import HEIGHT, WIDTH
from . import check, is_int

# Preset name -> architecture config. ``cpu`` is the CPU recipe's default (docs/results.md
# compares it with ``tiny`` and ``small`` at the same budget); ``small`` is the GPU env's.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {"arch": "resnet", "blocks": 3, "channels": 32, "value_hidden": 32},
    "cpu": {"arch": "resnet", "blocks": 4, "channels": 48, "value_hidden": 48},
    "small": {"arch": "resnet", "blocks": 5, "channels": 64, "value_hidden": 64},
    "connectzero": {"arch": "resnet", "blocks": 19, "channels": 128, "value_hidden": 128},
    "mlp": {"arch": "mlp", "hidden": [128, 128, 64]},
}

# arch -> {key: default}; the full set of keys each architecture accepts.
_ARCH_KEYS: dict[str, dict[str, Any]] = {
    "resnet": {
        "blocks": 3,
        "channels": 32,
        "value_hidden": 32,
        "policy_planes": 2,
        "value_planes": 1,
    },
    "mlp": {"hidden": [128, 128, 64]},
}

MAX_PARAMETERS = 50_000_000
"""Refuse architectures above this many parameters (the largest preset has 5.6 M): a model
file is small, but the network its config describes is allocated in full."""
MAX_BLOCKS, MAX_CHANNELS, MAX_HIDDEN, MAX_LAYERS = 64, 1024, 8192, 32
"""Bounds of single architecture keys, checked before anything is allocated."""


def parameter_count(config: dict[str, Any]) -> int:
    """Trainable parameters of a resolved architecture config, computed without building it."""
    cells = HEIGHT * WIDTH
    if config["arch"] == "resnet":
        c, b, v = config["channels"], config["blocks"], config["value_hidden"]
        pp, vp = config["policy_planes"], config["value_planes"]
        stem = 3 * c * 9 + 2 * c
        block = 2 * (c * c * 9 + 2 * c)
        policy = c * pp + 2 * pp + pp * cells * WIDTH + WIDTH
        value = c * vp + 2 * vp + vp * cells * v + v + v + 1
        return stem + b * block + policy + value
    widths = [cells + 1, *config["hidden"]]
    body = sum(a * b + b for a, b in itertools.pairwise(widths))
    last = widths[-1]
    return body + last * WIDTH + WIDTH + last * 32 + 32 + 32 + 1


def _check_bounds(config: dict[str, Any]) -> None:
    limits = {
        "blocks": MAX_BLOCKS,
        "channels": MAX_CHANNELS,
        "value_hidden": MAX_HIDDEN,
        "policy_planes": MAX_CHANNELS,
        "value_planes": MAX_CHANNELS,
    }
    for key, limit in limits.items():
        if key in config and config[key] > limit:
            raise ValueError(f"model config key {key!r} = {config[key]} is above the limit {limit}")
    hidden = config.get("hidden", [])
    if len(hidden) > MAX_LAYERS or any(h > MAX_HIDDEN for h in hidden):
        raise ValueError(
            f"model config key 'hidden' = {hidden!r} is above the limits ({MAX_LAYERS} layers "
            f"of at most {MAX_HIDDEN} units)"
        )
    count = parameter_count(config)
    if count > MAX_PARAMETERS:
        raise ValueError(
            f"model config {config!r} has {count:,} parameters, above the limit {MAX_PARAMETERS:,}"
        )


def _check_positive_int(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"model config key {key!r} must be a positive integer, got {value!r}")
    return value


def resolve_config(config: dict[str, Any] | str) -> dict[str, Any]:
    """The full architecture config for a preset name or a (possibly partial) config dict.

    ``{"preset": "tiny"}`` expands to the preset; other keys given next to
    ``preset`` override it. Without ``preset``, ``arch`` is required and missing
    keys take the architecture's defaults.

    Raises:
        ValueError: naming an unknown preset, arch or key, or an invalid value.
    """
    if isinstance(config, str):
        config = {"preset": config}
    if not isinstance(config, dict):
        raise ValueError(f"model config must be a dict or a preset name, got {config!r}")
    config = dict(config)
    if "preset" in config:
        name = config.pop("preset")
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r}; choose one of: {', '.join(PRESETS)}")
        config = {**PRESETS[name], **config}
    arch = config.pop("arch", None)
    if arch not in _ARCH_KEYS:
        raise ValueError(
            f"model config key 'arch' must be one of {sorted(_ARCH_KEYS)} "
            f"(or give 'preset'), got {arch!r}"
        )
    defaults = _ARCH_KEYS[arch]
    unknown = sorted(set(config) - set(defaults))
    if unknown:
        raise ValueError(
            f"unknown model config key(s) {', '.join(map(repr, unknown))} for arch {arch!r}; "
            f"valid keys are: preset, arch, {', '.join(defaults)}"
        )
    out: dict[str, Any] = {"arch": arch, **defaults, **config}
    if arch == "resnet":
        for key in _ARCH_KEYS["resnet"]:
            _check_positive_int(key, out[key])
    else:
        hidden = out["hidden"]
        if not isinstance(hidden, (list, tuple)) or not hidden:
            raise ValueError(
                f"model config key 'hidden' must be a non-empty list of ints, got {hidden!r}"
            )
        out["hidden"] = [_check_positive_int("hidden", h) for h in hidden]
    _check_bounds(out)  # before anything is allocated
    return out


@dataclass(frozen=True)
class ModelSpec:
    """The network a run starts from (parameter section ``model``): a preset or an architecture.

    Exactly one of ``preset`` and ``arch`` is set: an ``--params model.arch...``
    override names ``model.preset=null`` too, or the error says so.
    """

    preset: str | None = "cpu"
    """A name of :data:`PRESETS`: ``cpu`` (the CPU recipe), ``tiny``, ``small``, ``connectzero``,
    ``mlp``."""
    arch: dict[str, Any] | None = None
    """An architecture config for :func:`build_model`, instead of ``preset``."""
    seed: int = 0
    """Seeds the initial weights."""
    start_from: str | None = None
    """Start from a trained network instead of fresh weights: a registered version
    (``models:/connect-zero@champion``, ``models:/connect-zero/3``) or a run id (its last
    generation's model). Its own architecture is used; ``preset``/``arch`` are then ignored."""
    start_window: bool = False
    """With ``start_from``: take over the source run's replay window too, the games of its
    last ``train.buffer_gens - 1`` generations up to the start, so the first generations
    train on a full window (they are generation 0's games)."""

    def __post_init__(self):
        check(self.start_from is None or (isinstance(self.start_from, str) and self.start_from),
              "start_from", self.start_from, "null, models:/<name>@<alias>, models:/<name>/<n> "
              "or a run id")  # fmt: skip
        check(isinstance(self.start_window, bool), "start_window", self.start_window, "a boolean")
        check(not self.start_window or self.start_from is not None, "start_window",
              self.start_window, "false unless start_from names the run to take it from")  # fmt: skip
        if (self.arch is None) == (self.preset is None):
            raise ValueError(
                "exactly one of 'preset' and 'arch' must be set (set the other to null), got "
                f"preset={self.preset!r}, arch={self.arch!r}"
            )
        check(is_int(self.seed), "seed", self.seed, "an integer")
        resolve_config(self.config())  # an unknown preset or a bad architecture fails here

    def config(self) -> dict[str, Any] | str:
        """What :func:`build_model` takes."""
        return dict(self.arch) if self.arch is not None else self.preset


@dataclass(frozen=True)
class ReinforceModelSpec(ModelSpec):
    """The REINFORCE baseline's initial policy (section ``reinforce.model``): the MLP by default."""

    preset: str | None = "mlp"

    def __post_init__(self):
        check(self.start_from is None, "start_from", self.start_from,
              "null (the REINFORCE baseline starts from fresh weights)")  # fmt: skip
        super().__post_init__()

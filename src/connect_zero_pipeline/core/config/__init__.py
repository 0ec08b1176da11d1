"""Typed configs from plain parameter dicts, with loud errors for unknown or bad keys.

This package is core's light layer: every config a parameter file can spell, as frozen
dataclasses in plain Python (``search``, ``selfplay``, ``training``, ``evaluation``,
``models``, ``reinforce``, ``scorecard``, ``players``, ``export``), and the one parser that
builds them (:func:`from_params`). None of it imports torch, numpy, pandas or numba, so the
command line checks a run's parameters before anything heavy is imported
(``tests/test_startup.py``); the modules that compute import their configs from here."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def from_params(cls: type[T], params: Mapping[str, Any] | None, section: str,
                default: T | None = None) -> T:  # fmt: skip
    """Build the frozen dataclass ``cls`` from ``params``: the one parser of every config.

    A field whose type is a dataclass (``mcts: MCTSConfig``, ``node: NodeSettings``) is a
    nested mapping, built by the same rules: its missing keys keep the values of the
    field's default instance, so ``selfplay.mcts.sims`` changes the simulations and keeps
    the rest of self-play's search.

    Args:
        cls: a dataclass; its ``__post_init__`` validates values (with :func:`check`).
        params: the parameter mapping (missing keys take ``default``'s values, else the
            dataclass defaults).
        section: the parameter path, named in error messages (e.g. ``"selfplay"``).
        default: an instance of ``cls`` whose values the missing keys keep.

    Raises:
        ValueError: for a key ``cls`` does not have, naming ``section.key`` and
            the nearest valid key, or for a value the dataclass rejects, naming
            ``section.key`` (messages from :func:`check` start with the key).
    """
    if params is not None and not isinstance(params, Mapping):
        raise ValueError(f"invalid parameter: {section} must be a mapping of keys, got {params!r}")
    params = dict(params or {})
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise unknown_key_error(section, unknown[0], names)
    hints = _hints(cls)
    values = {}
    for key, value in params.items():
        expected = hints.get(key)
        nested = _dataclass_in(expected)
        if nested is not None and isinstance(value, Mapping):
            base = getattr(default, key) if default is not None else field_default(cls, key)
            values[key] = from_params(nested, value, f"{section}.{key}",
                                      base if isinstance(base, nested) else None)  # fmt: skip
            continue
        if expected is not None and not _type_ok(value, expected):
            raise ValueError(
                f"invalid parameter: {section}.{key} must be {_type_name(expected)}, got {value!r}"
            )
        values[key] = value
    try:
        return dataclasses.replace(default, **values) if default is not None else cls(**values)
    except (TypeError, ValueError) as exc:
        message = str(exc).removeprefix(f"{cls.__name__}.")
        if message.startswith("invalid parameter: "):  # named whole where it was raised
            raise ValueError(message) from exc
        if message.split(" ", 1)[0] in names:  # "lr must be > 0, got -1" -> "train.lr must ..."
            message = f"{section}.{message}"
        raise ValueError(f"invalid parameter: {message}") from exc


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Parameter mapping ``over`` merged into ``base`` key by key (nested mappings too)."""
    out = dict(base)
    for key, value in over.items():
        nested = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = merged(out[key], value) if nested else value
    return out


def field_default(cls: type, name: str) -> Any:
    """The default value of field ``name`` of dataclass ``cls`` (``MISSING`` if none)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
            return f.default
    raise KeyError(name)


def defaults(cls: type) -> dict[str, Any]:
    """Every key of ``cls`` and its default, nested dataclasses as dotted keys
    (``mcts.sims``): the recipe a parameter section spells (every field has a default)."""
    return values(cls())


def values(obj: Any) -> dict[str, Any]:
    """Every key of the dataclass instance ``obj`` and its value, nested ones as dotted keys."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out.update({f"{f.name}.{k}": v for k, v in values(value).items()})
        else:
            out[f.name] = value
    return out


def _dataclass_in(hint: Any) -> type | None:
    """The dataclass of an annotation ``X`` or ``X | None`` (None for any other)."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        found = [
            h for h in typing.get_args(hint) if isinstance(h, type) and dataclasses.is_dataclass(h)
        ]
        return found[0] if found else None
    return None


def _hints(cls) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that cannot be resolved: no type checks
        return {}


def _type_ok(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits a simple annotation (int, float, str, bool, list, dict, unions)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint in (list, tuple) or origin in (list, tuple):
        return isinstance(value, (list, tuple))
    if hint is dict or origin is dict:
        return isinstance(value, Mapping)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(value, (hint, Mapping))
    return True  # Any, torch.device, ...: the dataclass checks it


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(h) for h in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return "a mapping of keys"
    if hint is dict or origin is dict:
        return "a mapping"
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def unknown_key_error(section: str, key: str, valid: list[str]) -> ValueError:
    """The error for an unknown ``section.key``: names it and the nearest valid key, if any."""

    def qualified(name: str) -> str:
        return f"{section}.{name}" if section else name

    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f" Did you mean '{qualified(close[0])}'?" if close else ""
    return ValueError(
        f"unknown parameter '{qualified(key)}'.{hint} Valid keys of "
        f"'{section or 'parameters'}': {', '.join(valid)}"
    )


def is_int(value: Any) -> bool:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


MAX_LR = 1.0
"""The largest learning rate a config accepts: Adam steps of more than 1 are a typo."""


def check_lr(value: Any) -> None:
    """A learning rate: a number in ``(0, MAX_LR]``."""
    check(0 < value <= MAX_LR, "lr", value, f"in (0, {MAX_LR}]")


MAX_LOSS_WEIGHT = 100.0
"""The largest weight of a loss term (``value_coef``, ``beta``): above it the term is a typo."""


def check_loss_weight(key: str, value: Any) -> None:
    """The weight of a loss term: a number in ``[0, MAX_LOSS_WEIGHT]``."""
    check(0 <= value <= MAX_LOSS_WEIGHT, key, value, f"in [0, {MAX_LOSS_WEIGHT:g}]")


def check_loop_length(key: str, value: Any) -> None:
    """A structural loop length (generations, chunks): an integer in [1, 999]."""
    check(is_int(value) and 1 <= value <= 999, key, value, "an integer in [1, 999]")


def check(condition: bool, key: str, value: Any, requirement: str) -> None:
    """Raise ``ValueError`` naming ``key`` and ``value`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(f"{key} must be {requirement}, got {value!r}")


def mix_seed(seed: int, step: int) -> int:
    """The seed of step ``step`` (a generation, a batch) of a run seeded with ``seed``."""
    return int(seed) * 1_000_003 + int(step)

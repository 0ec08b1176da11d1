"""Networks for Connect-4: a fruit-fly MLP and a two-headed AlphaZero ResNet.

Protocol (docs/architecture.md §3)::

    model(boards int8 [B, 6, 7]) -> (logits [B, 7] float32, value [B] float32 in [-1, 1])

A single board ``[6, 7]`` maps to ``([7], [])``. Boards hold +1 for the side to
move, -1 for the opponent and 0 for empty (row 0 at the top); each model turns
them into float input planes inside ``forward``, so callers never do. Logits
are raw: illegal columns are masked by the caller, never trusted to the model.

Every model exposes ``.config``, a plain JSON-serialisable dict from which
:func:`build_model` rebuilds it, so a checkpoint is ``{"config": model.config,
"state_dict": model.state_dict()}`` and loads with ``torch.load(weights_only=True)``.

Shapes: B = batch, C = channels, A = 7 columns.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .board import HEIGHT, WIDTH
from .config.models import resolve_config


def _as_batch(boards: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """``int8 [B, 6, 7]`` (or a single ``[6, 7]``) -> ``([B, 6, 7], was_single)``."""
    if boards.dim() == 2:
        boards = boards.unsqueeze(0)  # (1, 6, 7)
        single = True
    else:
        single = False
    if boards.dim() != 3 or tuple(boards.shape[1:]) != (HEIGHT, WIDTH):
        raise ValueError(f"boards must be [B, 6, 7] or [6, 7], got {tuple(boards.shape)}")
    return boards, single


def _unbatch(logits: torch.Tensor, value: torch.Tensor, single: bool):
    return (logits[0], value[0]) if single else (logits, value)


class SimpleMLP(nn.Module):
    """The Connect-Zero "fruit-fly" model: flattened board -> Linear+ReLU stack -> heads.

    Input: the 42 cells as floats (+1 own, -1 opponent, 0 empty) plus the
    stone-count parity, ``[B, 43]``. Outputs 7 raw logits and a tanh value.
    """

    def __init__(self, hidden: list[int] | tuple[int, ...] = (128, 128, 64)):
        super().__init__()
        self.config = {"arch": "mlp", "hidden": [int(h) for h in hidden]}
        layers: list[nn.Module] = []
        width = HEIGHT * WIDTH + 1
        for h in self.config["hidden"]:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.body = nn.Sequential(*layers)
        self.policy = nn.Linear(width, WIDTH)
        self.value = nn.Sequential(nn.Linear(width, 32), nn.ReLU(), nn.Linear(32, 1), nn.Tanh())

    def forward(self, boards: torch.Tensor):
        boards, single = _as_batch(boards)
        x = boards.flatten(1).float()  # (B, 42)
        parity = (x != 0).sum(1, keepdim=True).remainder(2).float()  # (B, 1)
        h = self.body(torch.cat([x, parity], 1))  # (B, hidden[-1])
        return _unbatch(self.policy(h), self.value(h).squeeze(1), single)


class _ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN + skip, then ReLU."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(h)))


class ResNet(nn.Module):
    """Two-headed AlphaZero network.

    Input planes ``[B, 3, 6, 7]``: own stones, opponent stones, and a constant
    plane holding the stone-count parity (Connect-4 threats depend on whose
    turn it is). Stem conv 3x3 -> ``blocks`` residual blocks of ``channels`` ->
    policy head (1x1 conv to ``policy_planes`` planes, linear to 7 logits) and value
    head (1x1 conv to ``value_planes`` planes, MLP with ``value_hidden`` units, tanh).
    AlphaZero's heads have 2 and 1 planes (the defaults, every preset's); docs/results.md
    measures wider ones (8 and 4 on ``cpu``: no gain in a full run).
    """

    def __init__(
        self,
        blocks: int = 3,
        channels: int = 32,
        value_hidden: int = 32,
        policy_planes: int = 2,
        value_planes: int = 1,
    ):
        super().__init__()
        self.config = {
            "arch": "resnet",
            "blocks": int(blocks),
            "channels": int(channels),
            "value_hidden": int(value_hidden),
            "policy_planes": int(policy_planes),
            "value_planes": int(value_planes),
        }
        pp, vp = self.config["policy_planes"], self.config["value_planes"]
        cells = HEIGHT * WIDTH
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()
        )
        self.blocks = nn.Sequential(*[_ResidualBlock(channels) for _ in range(blocks)])
        self.policy_conv = nn.Sequential(
            nn.Conv2d(channels, pp, 1, bias=False), nn.BatchNorm2d(pp), nn.ReLU()
        )
        self.policy_fc = nn.Linear(pp * cells, WIDTH)
        self.value_conv = nn.Sequential(
            nn.Conv2d(channels, vp, 1, bias=False), nn.BatchNorm2d(vp), nn.ReLU()
        )
        self.value_fc = nn.Sequential(
            nn.Linear(vp * cells, value_hidden), nn.ReLU(), nn.Linear(value_hidden, 1), nn.Tanh()
        )

    @staticmethod
    def planes(boards: torch.Tensor) -> torch.Tensor:
        """``int8 [B, 6, 7]`` -> ``float32 [B, 3, 6, 7]`` (own, opponent, parity)."""
        own = boards == 1  # (B, 6, 7)
        opp = boards == -1  # (B, 6, 7)
        parity = (boards != 0).sum((1, 2), keepdim=True).remainder(2)  # (B, 1, 1)
        return torch.stack([own, opp, parity.expand_as(own).bool()], 1).float()  # (B, 3, 6, 7)

    def forward(self, boards: torch.Tensor):
        boards, single = _as_batch(boards)
        h = self.blocks(self.stem(self.planes(boards)))  # (B, C, 6, 7)
        logits = self.policy_fc(self.policy_conv(h).flatten(1))  # (B, 7)
        value = self.value_fc(self.value_conv(h).flatten(1)).squeeze(1)  # (B,)
        return _unbatch(logits, value, single)


def build_model(config: dict[str, Any] | str) -> nn.Module:
    """Build a model from its config (``model.config``), a partial config or a preset name.

    Examples: ``build_model({"preset": "tiny"})``,
    ``build_model({"arch": "resnet", "blocks": 3, "channels": 32})``,
    ``build_model("mlp")``. The result's ``.config`` is the full resolved dict.

    Raises:
        ValueError: see :func:`resolve_config`.
    """
    cfg = resolve_config(config)
    params = {k: v for k, v in cfg.items() if k != "arch"}
    return ResNet(**params) if cfg["arch"] == "resnet" else SimpleMLP(**params)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

"""A generation's training settings (:class:`TrainConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from . import check, check_loss_weight, check_lr

PRECISIONS = ("float32", "bfloat16", "auto")
"""What training's arithmetic may run in: ``auto`` is bfloat16 on a CPU that multiplies it
natively (``core.device.native_bf16``), float32 elsewhere (an AVX2 CPU would emulate
bfloat16, slower than float32; on CUDA the float32 products already run as TF32)."""


@dataclass(frozen=True)
class TrainConfig:
    """Training of one generation. The defaults are the project's recipe, the values of
    ``conf/base/parameters_train.yml`` (``tests/test_conf.py`` checks they are equal)."""

    batch_size: int = 256
    """Minibatch size."""
    samples_per_position: float = 2.5
    """Training samples drawn per position of the newest generation (a mirrored copy counts
    as a position): a generation trains ``samples_per_position * new rows / batch_size``
    steps on minibatches from the whole window, so its cost does not grow with the window."""
    lr: float = 3e-3
    """Peak learning rate, at the start of the run."""
    lr_min: float = 1e-4
    """Learning rate at the end of the run (cosine schedule over all generations)."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    value_coef: float = 1.0
    """Weight of the value MSE next to the policy cross-entropy."""
    grad_clip: float = 1.0
    """Max global grad norm (0 disables clipping)."""
    buffer_gens: int = 4
    """Replay window: train on the last this-many generations of self-play."""
    mirror: bool = True
    """Add the left-right mirror of every position at load time."""
    root_value_weight: float = 0.5
    """Value target ``(1 - w) * z + w * root_value`` (0: the game outcome, as AlphaZero)."""
    merge_duplicates: bool = True
    """Train on each distinct position of the window once, with the mean of its
    targets (``pi`` and the value target), instead of once per occurrence."""
    max_loss: float = 50.0
    """Stop with an error when a minibatch loss exceeds this (or is not finite)."""
    seed: int = 0
    """Seeds minibatch shuffling (the generation number is mixed in by the caller)."""
    precision: str = "float32"
    """The forward and backward passes' arithmetic (:data:`PRECISIONS`): float32,
    bfloat16 (autocast; the weights, AdamW's moments and the loss stay float32) or auto
    (bfloat16 on a CPU with native bfloat16 products, float32 elsewhere)."""

    def __post_init__(self):
        check(self.batch_size >= 1, "batch_size", self.batch_size, ">= 1")
        check(
            self.samples_per_position > 0, "samples_per_position", self.samples_per_position, "> 0"
        )
        check_lr(self.lr)
        check(0 < self.lr_min <= self.lr, "lr_min", self.lr_min, f"in (0, lr={self.lr}]")
        check(0 <= self.weight_decay < 1, "weight_decay", self.weight_decay,
              "in [0, 1) (1 or more wipes the weights every step)")  # fmt: skip
        check_loss_weight("value_coef", self.value_coef)
        check(self.grad_clip >= 0, "grad_clip", self.grad_clip, ">= 0")
        check(self.buffer_gens >= 1, "buffer_gens", self.buffer_gens, ">= 1")
        check(self.max_loss > 0, "max_loss", self.max_loss, "> 0")
        check(self.precision in PRECISIONS, "precision", self.precision,
              f"one of {', '.join(PRECISIONS)}")  # fmt: skip
        check(
            0 <= self.root_value_weight <= 1,
            "root_value_weight",
            self.root_value_weight,
            "in [0, 1]",
        )

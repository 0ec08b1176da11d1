"""AlphaZero training: replay window -> tensors, the loss, and the optimiser loop.

- **Replay window.** The tables of the last ``buffer_gens`` generations of
  self-play are concatenated; with ``mirror`` every position is also added
  left-right mirrored (board and ``pi`` reversed, same ``z``), at load time.
- **Loss.** ``CE(pi, softmax(logits)) + value_coef * MSE(value, z)``. Illegal
  columns have ``pi = 0`` so they add nothing to the cross-entropy.
- **Optimiser.** AdamW with weight decay, a cosine learning-rate schedule over
  the *whole run* (generation ``g`` of ``G`` covers progress ``(g-1)/G .. g/G``
  and the rate falls from ``lr`` to ``lr_min``), grad-norm clipping and
  shuffled minibatches. A fresh optimiser per generation (AdamW moments are
  short-lived next to a generation's steps).
- **Divergence guard.** A non-finite or exploding loss stops training with
  :class:`TrainingDivergedError`; the caller's model is never modified (the
  loop trains a copy), so the last good model stays the latest one.

Shapes: N samples, B minibatch, A = 7 columns.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from .bitboard import State, to_boards
from .config.training import TrainConfig
from .device import arithmetic, torch_threads
from .progress import progress_bar as _bar

log = logging.getLogger(__name__)

PI_COLUMNS = [f"pi_{c}" for c in range(1, 8)]


class TrainingDivergedError(RuntimeError):
    """The loss became non-finite or exceeded ``max_loss``; no model was produced."""


def check_games_table(table: pd.DataFrame, name: str, root_value: bool = True) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``table`` has the self-play training columns
    (``position``, ``mask``, ``pi_1..pi_7``, ``z``, and ``root_value`` if asked), without nulls."""
    needed = ["position", "mask", *PI_COLUMNS, "z", *(["root_value"] if root_value else [])]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise ValueError(f"self-play table {name} lacks column(s) {missing}")
    nulls = [c for c in needed if table[c].isna().any()]
    if nulls:
        raise ValueError(f"self-play table {name} has null values in column(s) {nulls}")


def games_to_tensors(
    tables: Sequence[pd.DataFrame],
    mirror: bool = True,
    root_value_weight: float = 0.0,
    names: Sequence[str] | None = None,
    merge_duplicates: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Self-play tables -> training tensors.

    Args:
        tables: tables with the self-play schema (``position``, ``mask``,
            ``pi_1..pi_7``, ``z``, ``root_value``), e.g. the replay window.
        mirror: append the left-right mirror of every sample.
        root_value_weight: the value target is ``(1 - w) * z + w * root_value``;
            0 is AlphaZero's game outcome. Mixing in the search's own estimate
            lowers the target's noise when games are short and play is weak.
        names: the tables' names for error messages (default: their index).
        merge_duplicates: return each distinct board once (after mirroring),
            with the mean ``pi`` and value target of its occurrences
            (:func:`merge_duplicate_boards`).

    Raises:
        ValueError: naming the table, for a missing column or a null value.

    Returns:
        ``boards int8 [N, 6, 7]``, ``pi float32 [N, 7]``, ``z float32 [N]`` (the value target).
    """
    if not tables:
        raise ValueError("no self-play tables to train on")
    names = list(names) if names is not None else [f"#{i}" for i in range(len(tables))]
    for table, name in zip(tables, names, strict=True):
        check_games_table(table, name, root_value=bool(root_value_weight))
    df = pd.concat(list(tables), ignore_index=True)
    position = torch.from_numpy(df["position"].to_numpy(np.uint64).view(np.int64).copy())
    mask = torch.from_numpy(df["mask"].to_numpy(np.uint64).view(np.int64).copy())
    boards = to_boards(State(position, mask, torch.zeros_like(mask)))  # (N, 6, 7)
    pi = torch.from_numpy(df[PI_COLUMNS].to_numpy(np.float32).copy())  # (N, 7)
    z = value_targets(df, root_value_weight)  # (N,)
    if mirror:
        boards = torch.cat([boards, boards.flip(-1)])  # (2N, 6, 7)
        pi = torch.cat([pi, pi.flip(-1)])
        z = torch.cat([z, z])
    if merge_duplicates:
        boards, pi, z = merge_duplicate_boards(boards, pi, z)
    return boards, pi, z


def value_targets(games: pd.DataFrame, root_value_weight: float) -> torch.Tensor:
    """``float32 [N]``: the value target of each row of ``games``, ``(1 - w) * z + w *
    root_value`` with ``w = root_value_weight`` (0: the game's outcome alone).

    The one place the value target is made: a different target (a return over the game's
    later root values, a mix that changes with the ply) replaces this function, and every
    other step of training stays as it is. docs/results.md's opening ablations measured such
    variants against this one (O2, O3, O5, O8)."""
    z = torch.from_numpy(games["z"].to_numpy(np.float32).copy())  # (N,)
    if not root_value_weight:
        return z
    q = torch.from_numpy(games["root_value"].to_numpy(np.float32).copy())  # (N,)
    return (1.0 - root_value_weight) * z + root_value_weight * q


def merge_duplicate_boards(
    boards: torch.Tensor, pi: torch.Tensor, z: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each distinct board of ``boards int8 [N, 6, 7]`` once, with the mean of its
    ``pi [N, 7]`` rows and ``z [N]`` values; the boards keep their first-seen order.

    Self-play repeats positions (the empty board once per game, openings often):
    averaging their targets removes that repetition's noise and its weight."""
    n = boards.shape[0]
    if n == 0:
        return boards, pi, z
    rows = np.ascontiguousarray(boards.reshape(n, -1).numpy())  # (N, 42) int8
    keys = rows.view(np.dtype((np.void, rows.shape[1]))).ravel()  # (N,) one key per board
    _, first, inverse, counts = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first, kind="stable")  # unique ids in first-seen order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    group = torch.from_numpy(rank[inverse.ravel()])  # (N,) output row of each sample
    size = torch.from_numpy(counts[order].astype(np.float32))  # (U,)
    merged_pi = torch.zeros(order.size, 7).index_add_(0, group, pi) / size[:, None]
    merged_z = torch.zeros(order.size).index_add_(0, group, z) / size
    return boards[torch.from_numpy(first[order])], merged_pi, merged_z


def alphazero_loss(
    logits: torch.Tensor, value: torch.Tensor, pi: torch.Tensor, z: torch.Tensor, value_coef: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The AlphaZero loss.

    Args:
        logits: ``[B, 7]`` raw policy logits.
        value: ``[B]`` value predictions in [-1, 1].
        pi: ``[B, 7]`` policy targets, the search's action weights (rows sum to 1): the
            root visit distribution under PUCT, the improved policy under Gumbel search.
        z: ``[B]`` value targets for the side to move (:func:`value_targets`: the game's
            outcome, mixed with the search's root value by default).

    Returns:
        ``(loss, policy_loss, value_loss)``, scalars:
        ``policy_loss = mean_b -sum_a pi log softmax(logits)``,
        ``value_loss = mean_b (value - z)^2``, ``loss = policy + value_coef * value``.
    """
    policy_loss = -(pi * F.log_softmax(logits, dim=1)).sum(1).mean()
    value_loss = F.mse_loss(value, z)
    return policy_loss + value_coef * value_loss, policy_loss, value_loss


def cosine_lr(progress: float, lr: float, lr_min: float) -> float:
    """Learning rate at run ``progress`` in [0, 1]: ``lr`` at 0, ``lr_min`` at 1."""
    progress = min(max(progress, 0.0), 1.0)
    return lr_min + 0.5 * (lr - lr_min) * (1.0 + math.cos(math.pi * progress))


def train_steps(config: TrainConfig, new_rows: int) -> int:
    """Steps for a generation that added ``new_rows`` samples (mirrors included)."""
    return max(1, math.ceil(config.samples_per_position * new_rows / config.batch_size))


def train_step(
    net: nn.Module,
    opt: torch.optim.Optimizer,
    boards: torch.Tensor,
    pi: torch.Tensor,
    z: torch.Tensor,
    config: TrainConfig,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """One optimiser step on a minibatch (``boards int8 [B, 6, 7]``, ``pi [B, 7]``, ``z [B]``),
    the network's products in ``dtype`` (bfloat16: autocast; the loss, the gradients' sums
    into the float32 weights and the optimiser in float32).

    Returns ``[4]`` detached ``(loss, policy_loss, value_loss, policy_entropy)`` on the
    device, read by nobody here: the step never waits for the device.
    """
    with arithmetic(boards.device.type, dtype):
        logits, value = net(boards)
    logits, value = logits.float(), value.float()
    loss, policy_loss, value_loss = alphazero_loss(logits, value, pi, z, config.value_coef)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if config.grad_clip > 0:
        nn.utils.clip_grad_norm_(net.parameters(), config.grad_clip)
    opt.step()
    with torch.no_grad():
        p = F.softmax(logits, 1)
        entropy = -(p * torch.log(p.clamp_min(1e-12))).sum(1).mean()
        return torch.stack([loss, policy_loss, value_loss, entropy]).detach()


def train_model(
    model: nn.Module,
    boards: torch.Tensor,
    pi: torch.Tensor,
    z: torch.Tensor,
    config: TrainConfig,
    num_steps: int,
    progress: tuple[float, float] = (0.0, 1.0),
    device: torch.device | str = "cpu",
    seed: int | None = None,
    progress_bar: bool = False,
    num_threads: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[nn.Module, dict[str, float]]:
    """Train a copy of ``model`` on ``(boards, pi, z)``; ``model`` itself is not modified.

    Args:
        model: the network to start from.
        boards: ``int8 [N, 6, 7]``; ``pi``: ``float32 [N, 7]``; ``z``: ``float32 [N]``.
        config: hyper-parameters.
        num_steps: optimiser steps; minibatches walk through shuffled passes of the data.
        progress: the span of the whole run this call covers, for the cosine schedule.
        seed: shuffling seed (default ``config.seed``).
        progress_bar: show a progress bar (:mod:`connect_zero_pipeline.core.progress`).
        num_threads: torch CPU threads while training (None: torch's setting).
        dtype: the network's arithmetic (:func:`train_step`; :func:`.device.compute_dtype`
            resolves ``config.precision``).

    Returns:
        The trained model (eval mode) and metrics: ``loss``, ``policy_loss``,
        ``value_loss`` (means over the last pass), ``policy_entropy``,
        ``num_samples``, ``num_steps``, ``lr_start``, ``lr_end``,
        ``samples_per_s``, ``train_seconds``, ``bfloat16`` (1: the products ran in it).

    Raises:
        TrainingDivergedError: a minibatch loss was not finite or exceeded
            ``config.max_loss``.
    """
    n = boards.shape[0]
    if n == 0:
        raise ValueError("no training samples")
    assert pi.shape == (n, 7) and z.shape == (n,), (pi.shape, z.shape)
    device = torch.device(device)
    # Channels-last convolutions train faster on CPU (oneDNN's preferred layout);
    # the returned model is back in the default layout, as the caller gave it.
    net = copy.deepcopy(model).to(device, memory_format=torch.channels_last).train()
    b_boards, b_pi, b_z = boards.to(device), pi.to(device), z.to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    gen = torch.Generator().manual_seed(config.seed if seed is None else seed)
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")
    steps_per_epoch = max(1, math.ceil(n / config.batch_size))
    p0, p1 = progress
    lrs = [
        cosine_lr(p0 + (p1 - p0) * s / num_steps, config.lr, config.lr_min)
        for s in range(num_steps)
    ]

    sums = torch.zeros(4, device=device)  # loss, policy, value, entropy over the current epoch
    epoch_steps = 0
    check_every = 20
    window = torch.zeros(check_every, device=device)
    steps = range(num_steps)
    if progress_bar:
        steps = _bar(steps, desc="train", unit="step", leave=False)
    start = time.perf_counter()
    perm = torch.randperm(n, generator=gen).to(device)
    with torch_threads(num_threads):
        for step in steps:
            k = step % steps_per_epoch
            if k == 0 and step:
                perm = torch.randperm(n, generator=gen).to(device)
                sums.zero_()
                epoch_steps = 0
            idx = perm[k * config.batch_size : (k + 1) * config.batch_size]  # (B,)
            for group in opt.param_groups:
                group["lr"] = lrs[step]
            stats = train_step(net, opt, b_boards[idx], b_pi[idx], b_z[idx], config, dtype)
            sums += stats
            window[step % check_every] = stats[0]
            epoch_steps += 1
            if (step + 1) % check_every == 0 or step + 1 == num_steps:
                _check_losses(window[: (step % check_every) + 1], step, config.max_loss)
    elapsed = time.perf_counter() - start
    mean = (sums / max(epoch_steps, 1)).tolist()
    metrics = {
        "loss": mean[0],
        "policy_loss": mean[1],
        "value_loss": mean[2],
        "policy_entropy": mean[3],
        "num_samples": float(n),
        "num_steps": float(num_steps),
        "lr_start": lrs[0],
        "lr_end": lrs[-1],
        "samples_per_s": num_steps * config.batch_size / elapsed if elapsed > 0 else 0.0,
        "train_seconds": elapsed,
        "bfloat16": float(dtype == torch.bfloat16),
    }
    return net.to(memory_format=torch.contiguous_format).eval(), metrics


def _check_losses(losses: torch.Tensor, step: int, max_loss: float) -> None:
    worst = float(losses.max()) if bool(torch.isfinite(losses).all()) else float("nan")
    if not math.isfinite(worst) or worst > max_loss:
        raise TrainingDivergedError(
            f"training diverged near step {step + 1}: minibatch loss {worst} "
            f"(limit max_loss={max_loss}); the previous model is kept"
        )

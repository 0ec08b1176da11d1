"""``bench train``: samples/s of the train node vs a bare torch loop on the same tensors.

``train_node_samples_per_s``: the node's figure includes everything it does for a
generation (tables to tensors with mirror augmentation, the schedule, the divergence guard,
the metrics); the baseline is the minimal AdamW loop over the same minibatches. Both run
with the node's default torch threads, alternately, on the node's default device (``auto``:
CUDA when there is one, with its synchronisations timed), with the ``tiny`` network.

``bfloat16_samples_per_s``: the node with the recipe's network (``model.preset``, the
``cpu`` ResNet) in bfloat16 (``train.precision: bfloat16``) against the same in float32,
alternately in this process; ``loop_*`` the same for the training loop alone (the node's
``samples_per_s`` metric: no tables to tensors); ``gflops`` is the node's achieved
arithmetic (forward and backward, counted by torch's FLOP counter) at the bfloat16 figure,
``baseline_gflops`` at float32's.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
import torch

from ..core.bitboard import initial_state, play, random_legal_actions, reset_done
from ..core.config.models import ModelSpec
from ..core.device import native_bf16, resolve_device
from ..core.models import build_model
from ..core.training import PI_COLUMNS, alphazero_loss, games_to_tensors
from ..executors.settings import NodeSettings
from ..params.train import TrainParams
from ..pipelines.alphazero.nodes import train_generation
from . import figure


def _games_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """A self-play-shaped table of random legal positions with random targets, in random
    order: its first rows are positions of every ply (played in order, its first 256 are
    the empty board, which the node merges into one sample)."""
    gen = torch.Generator().manual_seed(seed)
    state = initial_state(256)
    pos, mask = [], []
    while sum(len(p) for p in pos) < rows:
        pos.append(state.position.clone())
        mask.append(state.mask.clone())
        step = play(state, random_legal_actions(state, gen), validate=False)
        state = reset_done(step.state, step.done)
    position = torch.cat(pos)[:rows].numpy().view(np.uint64)
    masks = torch.cat(mask)[:rows].numpy().view(np.uint64)
    pi = torch.softmax(torch.randn(rows, 7, generator=gen), 1).numpy()
    df = pd.DataFrame({"position": position, "mask": masks})
    for c, name in enumerate(PI_COLUMNS):
        df[name] = pi[:, c].astype(np.float32)
    df["z"] = torch.randint(-1, 2, (rows,), generator=gen).float().numpy()
    df["root_value"] = (torch.rand(rows, generator=gen) * 2 - 1).numpy()  # the search's value
    order = torch.randperm(rows, generator=gen).numpy()
    return df.iloc[order].reset_index(drop=True)


def _bare_loop(model, boards, pi, z, cfg: TrainParams, num_steps: int) -> None:
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    n = boards.shape[0]
    perm = torch.randperm(n).to(boards.device)
    per_pass = max(1, n // cfg.batch_size)
    for step in range(num_steps):
        k = step % per_pass
        idx = perm[k * cfg.batch_size : (k + 1) * cfg.batch_size]
        logits, value = model(boards[idx])
        loss, _, _ = alphazero_loss(logits, value, pi[idx], z[idx], cfg.value_coef)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()


def run(args) -> Iterator[dict]:
    os.environ.setdefault("TQDM_DISABLE", "1")  # the node's progress bar: not part of the figure
    rows = 4_000 if args.quick else 16_000
    repeats = 1 if args.quick else 3
    device = resolve_device("auto")
    cfg = TrainParams(node=NodeSettings(device=device.type, num_threads=None))
    table = _games_table(rows)
    params = {k: getattr(cfg, k) for k in cfg.__dataclass_fields__ if k != "node"}
    params["node"] = {"device": device.type, "num_threads": None}
    torch.manual_seed(0)
    model = build_model("tiny")
    boards, pi, z = games_to_tensors(
        [table], mirror=cfg.mirror, root_value_weight=cfg.root_value_weight
    )
    boards, pi, z = boards.to(device), pi.to(device), z.to(device)
    num_steps = max(1, round(cfg.samples_per_position * boards.shape[0] / cfg.batch_size))
    samples = num_steps * cfg.batch_size
    node_best = bare_best = 0.0
    threads = torch.get_num_threads()
    for _ in range(repeats):
        start = time.perf_counter()
        train_generation(model, params, table, generation=1, num_generations=1)
        node_best = max(node_best, samples / (time.perf_counter() - start))
        torch.set_num_threads(cfg.node.num_threads or threads)
        try:
            net = build_model("tiny").to(device).train()
            start = time.perf_counter()
            _bare_loop(net, boards, pi, z, cfg, num_steps)
            if device.type == "cuda":
                torch.cuda.synchronize()
            bare_best = max(bare_best, samples / (time.perf_counter() - start))
        finally:
            torch.set_num_threads(threads)
    yield figure(
        "train",
        "train_node_samples_per_s",
        node_best,
        baseline=bare_best,
        model="tiny",
        batch_size=cfg.batch_size,
        rows=rows,
        steps=num_steps,
        threads=cfg.node.num_threads,
        device=device.type,
    )
    yield _precisions(table.head(250) if args.quick else table, params, repeats)


def _flops_per_sample(model, batch: int = 64) -> float:
    """Forward and backward FLOPs of one training sample of ``model`` (torch's counter)."""
    from torch.utils.flop_counter import FlopCounterMode  # noqa: PLC0415

    net = copy.deepcopy(model).train()
    boards = torch.zeros(batch, 6, 7, dtype=torch.int8)
    with FlopCounterMode(display=False) as counter:
        logits, value = net(boards)
        (logits.sum() + value.sum()).backward()
    return counter.get_total_flops() / batch


def _precisions(table: pd.DataFrame, params: dict, repeats: int) -> dict:
    """The train node on the recipe's network in bfloat16 against float32 (module docstring)."""
    preset = ModelSpec().preset
    torch.manual_seed(0)
    model = build_model(preset)
    samples = 0.0
    best = {"float32": 0.0, "bfloat16": 0.0}
    loop = dict(best)  # the training loop alone (its samples_per_s): no tables to tensors
    for _ in range(repeats):
        for precision in best:
            start = time.perf_counter()
            _, metrics = train_generation(model, {**params, "precision": precision}, table,
                                          generation=1, num_generations=1)  # fmt: skip
            samples = metrics["num_steps"] * params["batch_size"]
            best[precision] = max(best[precision], samples / (time.perf_counter() - start))
            loop[precision] = max(loop[precision], metrics["samples_per_s"])
    flops = _flops_per_sample(model)
    return figure(
        "train",
        "bfloat16_samples_per_s",
        best["bfloat16"],
        baseline=best["float32"],
        model=preset,
        gflops=round(best["bfloat16"] * flops / 1e9, 1),
        baseline_gflops=round(best["float32"] * flops / 1e9, 1),
        mflop_per_sample=round(flops / 1e6, 1),
        loop_samples_per_s=round(loop["bfloat16"]),
        loop_baseline=round(loop["float32"]),
        loop_ratio=round(loop["bfloat16"] / loop["float32"], 3),
        native_bf16=native_bf16(),
        threads=torch.get_num_threads(),
        steps=round(samples / params["batch_size"]),
    )

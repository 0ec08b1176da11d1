"""``bench precision``: does bf16 autocast keep the search network's moves?

The shipped model (``pretrained/connect_zero.onnx``: its BatchNorm folded into the
convolutions, so rebuilt here as the same ResNet with identity BatchNorm, equal to the ONNX
file within float rounding) plays every position of the shipped solver set
(``data/03_primary/pons_positions.parquet``, its latest version) in float32 and under
``torch.autocast(dtype=torch.bfloat16)`` on this machine's device. Figures, each for the
network alone (``policy``: the legal argmax) and for Gumbel search at 16 and 64
simulations: ``agreement`` (the share of positions where both precisions play the same
move) and ``acc`` per precision (the share of optimal moves, ``solver.acc``'s rule).
``--quick``: the first 1,000 positions, the network alone and 16 simulations.

``selfplay_positions_per_s``: the recipe's self-play (:class:`SelfPlayConfig`'s defaults:
512 slots, Gumbel 16) with the same network, on one thread in this process, its
``precision`` bfloat16 against float32 (there onnxruntime, the ``auto`` backend's choice on
a CPU), alternately, best of 3 (``--quick``: 1): the positions searched per second over 16
env steps (``--quick``: 4) from the empty board.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..core.bitboard import State, legal_mask, to_boards
from ..core.config.search import MCTSConfig
from ..core.config.selfplay import SelfPlayConfig
from ..core.device import resolve_device
from ..core.inference import torch_evaluate_fn
from ..core.models import build_model
from ..core.search import search
from ..core.selfplay import self_play
from . import figure

PACKAGE = Path(__file__).resolve().parents[1]
SOLVER_SET = PACKAGE.parents[1] / "data" / "03_primary" / "pons_positions.parquet"


def shipped_network() -> torch.nn.Module:
    """The shipped ONNX model as a torch ResNet (its folded BatchNorm as identity + bias)."""
    import onnx  # noqa: PLC0415 (onnx: only for an ONNX model)
    from onnx import numpy_helper  # noqa: PLC0415 (onnx: only for an ONNX model)

    graph = onnx.load(str(PACKAGE / "pretrained" / "connect_zero.onnx"))
    config = json.loads({p.key: p.value for p in graph.metadata_props}["connect_zero.config"])
    init = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
            for i in graph.graph.initializer}  # fmt: skip
    net = build_model(config).eval()
    state = net.state_dict()
    folded = {"stem.0": "stem.1", "policy_conv.0": "policy_conv.1",
              "value_conv.0": "value_conv.1"}  # fmt: skip
    for block in range(config["blocks"]):
        folded.update({f"blocks.{block}.conv{c}": f"blocks.{block}.bn{c}" for c in (1, 2)})
    for conv, bn in folded.items():
        bias = init[f"model.{conv}.weight_bias"]
        state[f"{conv}.weight"] = init[f"model.{conv}.weight"]
        state[f"{bn}.weight"], state[f"{bn}.bias"] = torch.ones_like(bias), bias
        state[f"{bn}.running_mean"] = torch.zeros_like(bias)
        state[f"{bn}.running_var"] = torch.ones_like(bias) - net.stem[1].eps  # (x + eps) = 1
    for key in ("policy_fc.weight", "policy_fc.bias", "value_fc.0.weight", "value_fc.0.bias",
                "value_fc.2.weight", "value_fc.2.bias"):  # fmt: skip
        state[key] = init[f"model.{key}"]
    net.load_state_dict(state)
    return net


def selfplay_rates(net, device: torch.device, steps: int, repeats: int) -> dict:
    """``selfplay_positions_per_s`` (module docstring) for ``steps`` env steps."""
    best = {"float32": 0.0, "bfloat16": 0.0}
    base = dataclasses.replace(SelfPlayConfig(), moves_per_gen=steps, finish_games=False)
    for _ in range(repeats):
        for precision in best:
            start = time.perf_counter()
            self_play(dataclasses.replace(base, precision=precision), model=net, device=device)
            best[precision] = max(best[precision],
                                  steps * base.num_games / (time.perf_counter() - start))  # fmt: skip
    return figure("precision", "selfplay_positions_per_s", best["bfloat16"],
                  baseline=best["float32"], slots=base.num_games, sims=base.mcts.sims,
                  steps=steps, threads=1, device=device.type)  # fmt: skip


def run(args) -> Iterator[dict]:
    quick = bool(getattr(args, "quick", False))
    device = resolve_device("auto")
    table = pd.read_parquet(SOLVER_SET)
    if quick:
        table = table.head(1000)
    state = State(*(torch.tensor(table[c].to_numpy().astype(np.int64), device=device)
                    for c in ("position", "mask", "ply")))  # fmt: skip
    legal = legal_mask(state)
    scores = torch.tensor(table[[f"score_{c}" for c in range(1, 8)]].astype("float64")
                          .fillna(-1e9).to_numpy(), device=device)  # fmt: skip
    best = torch.tensor(table["best_score"].astype("float64").to_numpy(), device=device)
    net = shipped_network().to(device)
    fns = {bf16: torch_evaluate_fn(net, device, torch.bfloat16 if bf16 else torch.float32)
           for bf16 in (False, True)}  # fmt: skip

    def optimal(moves: torch.Tensor) -> float:
        return float((scores.gather(1, moves.unsqueeze(1)).squeeze(1) == best).float().mean())

    agents = [("policy", 0)] + [("gumbel", s) for s in ((16,) if quick else (16, 64))]
    for agent, sims in agents:
        moves = {}
        for bf16, fn in fns.items():
            if sims == 0:
                logits, _ = fn(to_boards(state))
                moves[bf16] = logits.masked_fill(~legal, float("-inf")).argmax(1)
            else:
                result = search(state, fn, MCTSConfig(sims=sims, search="gumbel"))
                moves[bf16] = result.action
        extra = {"agent": agent, "sims": sims, "positions": len(table), "device": device.type}
        yield figure("precision", "agreement", float((moves[False] == moves[True]).float().mean()),
                     **extra)  # fmt: skip
        yield figure("precision", "acc_fp32", optimal(moves[False]), **extra)
        yield figure("precision", "acc_bf16", optimal(moves[True]), **extra)
    yield selfplay_rates(net, device, steps=4 if quick else 16, repeats=1 if quick else 3)

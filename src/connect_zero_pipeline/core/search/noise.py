"""Root Dirichlet noise from explicit uniforms, so that any random stream can feed it (one per
game in self-play, :mod:`..selfplay`), or from a ``torch.Generator``."""

from __future__ import annotations

import math

import torch

from ..board import WIDTH

GAMMA_CANDIDATES = 6  # K: Marsaglia-Tsang draws per gamma variate (acceptance > 95% each)


def dirichlet_uniform_shape(batch: int) -> tuple[int, ...]:
    """Shape of the uniforms :func:`dirichlet_from_uniforms` consumes: ``[B, 7, K + 1, 3]``."""
    return (batch, WIDTH, GAMMA_CANDIDATES + 1, 3)


def dirichlet_from_uniforms(legal: torch.Tensor, alpha: float, u: torch.Tensor) -> torch.Tensor:
    """Symmetric ``Dir(alpha)`` over the legal columns, from uniforms in ``(0, 1)``.

    Gamma variates by Marsaglia-Tsang with ``K`` candidates drawn at once (the
    first accepted one is kept; if all ``K`` are rejected, probability below
    1e-7, the candidate mean ``d`` is used), boosted by ``U^(1/alpha)`` for
    ``alpha < 1``. Taking uniforms instead of a generator lets callers use any
    stream, e.g. one per game (see :mod:`.selfplay`).

    Args:
        legal: ``[B, 7] bool``.
        alpha: concentration > 0.
        u: ``[B, 7, K + 1, 3]`` float uniforms in (0, 1), see :func:`dirichlet_uniform_shape`.

    Returns:
        ``[B, 7] float32``, summing to 1 over legal columns (rows without one are 0).
    """
    a = alpha if alpha >= 1 else alpha + 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    cand, extra = u[:, :, :-1], u[:, :, -1, 0]  # (B, 7, K, 3), (B, 7)
    x = torch.sqrt(-2.0 * torch.log(cand[..., 0])) * torch.cos(2.0 * math.pi * cand[..., 1])
    v = (1.0 + c * x) ** 3  # (B, 7, K)
    ok = (v > 0) & (
        torch.log(cand[..., 2]) < 0.5 * x * x + d - d * v + d * torch.log(v.clamp(1e-30))
    )
    first = ok.to(torch.int8).argmax(-1, keepdim=True)  # (B, 7, 1)
    g = (d * v).gather(-1, first).squeeze(-1)  # (B, 7)
    g = torch.where(ok.any(-1), g, torch.full_like(g, d))
    if alpha < 1:
        g = g * extra ** (1.0 / alpha)
    g = g * legal
    return g / g.sum(1, keepdim=True).clamp_min(1e-30)


def sample_dirichlet(legal: torch.Tensor, alpha: float, generator: torch.Generator | None):
    """``[B, 7] float32`` ``Dir(alpha)`` over legal columns, drawn from a ``torch.Generator``."""
    shape = dirichlet_uniform_shape(legal.shape[0])
    u = torch.rand(shape, generator=generator, device=legal.device).clamp_(1e-12, 1.0)
    return dirichlet_from_uniforms(legal, alpha, u)

"""Checks of attention dropout shared by the causal and multi-head tests."""

from __future__ import annotations

import math

import torch
from torch import nn

from attention import causal_mask


def capture_dropout(module: nn.Module) -> dict[str, torch.Tensor]:
    """Record what goes into and comes out of ``module.dropout`` on each call."""
    seen: dict[str, torch.Tensor] = {}

    def hook(_: nn.Module, args: tuple[torch.Tensor], output: torch.Tensor) -> None:
        seen["input"], seen["output"] = args[0].detach(), output.detach()

    module.dropout.register_forward_hook(hook)
    return seen


def assert_causal_dropout(
    weights: torch.Tensor, dropped: torch.Tensor, p: float
) -> None:
    """Assert that ``dropped`` is inverted dropout, rate ``p``, of causal ``weights``.

    ``weights`` and ``dropped`` are ``(..., T, T)`` attention weights before
    and after dropout.
    """
    # The future was zero before dropout and stays zero.
    future = causal_mask(weights.shape[-1]).expand_as(weights)
    assert (weights[future] == 0).all() and (dropped[future] == 0).all()
    # Each visible weight is either zeroed or scaled by exactly 1 / (1 - p).
    visible_in, visible_out = weights[~future], dropped[~future]
    zeroed = visible_out == 0
    torch.testing.assert_close(
        visible_out[~zeroed], visible_in[~zeroed] / (1 - p), rtol=1e-6, atol=0
    )
    # About a fraction p is zeroed: within 6 standard deviations of a binomial.
    n = visible_in.numel()
    assert abs(zeroed.float().mean().item() - p) < 6 * math.sqrt(p * (1 - p) / n)

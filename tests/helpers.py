"""Assertions shared by the tests: the chapter's printed numbers, the
properties every causal module must have (each failure message names the
promise that broke), and the suite's one multi-head reference."""

from __future__ import annotations

import math
import re
import sys

import torch
from torch import nn

from attention import causal_mask


def assert_printed(actual: torch.Tensor, printed: list | float) -> None:
    """Equal to a value the chapter prints with 4 decimals (``-inf`` included)."""
    torch.testing.assert_close(
        actual.detach(), torch.tensor(printed, dtype=actual.dtype), rtol=0, atol=1e-4
    )


def assert_causal(module: nn.Module, x: torch.Tensor) -> None:
    """Changing tokens ``t..`` moves no output before ``t``, and moves ``t``
    (``module`` in eval mode; ``x`` is ``(b, T, d_in)``)."""
    out = module(x)
    gen = torch.Generator().manual_seed(0)
    for t in range(x.shape[1]):
        changed = x.clone()
        changed[:, t:] = torch.randn(changed[:, t:].shape, generator=gen, dtype=x.dtype)
        new = module(changed)
        torch.testing.assert_close(
            new[:, :t], out[:, :t], msg=f"token {t} changed an earlier output"
        )
        assert not torch.allclose(new[:, t], out[:, t]), f"token {t} did not reach t"


def assert_dropout_unbiased(
    module: nn.Module, x: torch.Tensor, draws: int = 4000
) -> None:
    """Dropout acts in training only, and its ``1 / (1 - p)`` scaling keeps the
    mean: ``draws`` copies of one sequence ``(1, T, d_in)`` must differ, and
    their mean equal the eval output within 6 standard errors."""
    expected = module.eval()(x)[0]
    with torch.no_grad():
        outs = module.train()(x.expand(draws, *x.shape[1:]))
    module.eval()
    assert not torch.allclose(outs[0], outs[1]), "no dropout in training mode"
    error = (outs.mean(dim=0) - expected).abs()
    std_of_mean = outs.std(dim=0) / math.sqrt(draws)
    worst = (error - 6 * std_of_mean).max().item()
    assert worst <= 1e-6, f"the mean over dropout draws is off by {worst:.3g}"


def assert_gradcheck(module: nn.Module, x: torch.Tensor) -> None:
    """Gradients of ``x`` and every parameter match finite differences (float64,
    eval mode)."""
    trainable = {name: p for name, p in module.named_parameters() if p.requires_grad}
    params = tuple(p.detach().clone().requires_grad_() for p in trainable.values())

    def run(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        state = dict(zip(trainable, params, strict=True))
        return torch.func.functional_call(module, state, (x,), strict=False)

    x = x.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(run, (x, *params))


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
    """``dropped`` is inverted dropout, rate ``p``, of the causal ``weights``
    (both ``(..., T, T)``)."""
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


def reference_multihead(
    state: dict[str, torch.Tensor],
    x: torch.Tensor,
    num_heads: int,
    num_kv_heads: int | None = None,
    hidden: torch.Tensor | None = None,
    weights_only: bool = False,
    rope: tuple | None = None,
) -> torch.Tensor:
    """Causal multi-head attention from ``state`` in the chapter's layout
    (``W_query.weight`` ... ``out_proj.bias``): the suite's one reference,
    written apart from the package (``einsum``, an explicit ``-inf`` triangle),
    differentiable. ``x`` ``(b, T, d_in)``; with ``num_kv_heads``, key/value
    head ``g`` serves query heads ``g * r .. g * r + r - 1``; ``hidden``
    ``(b, T, T)`` hides more pairs (a query that sees no key gets 0); with
    ``rope = (position_ids, base, layout)`` queries and keys are turned by
    :func:`reference_rope`. Returns ``(b, T, d_out)``, or the weights
    ``(b, h, T, T)`` with ``weights_only``.
    """

    def project(name: str, heads: int) -> torch.Tensor:
        # (b, T, d_in) x (out, d_in) -> (b, T, out) -> (b, T, heads, hd)
        out = torch.einsum("btd,od->bto", x, state[f"{name}.weight"])
        if f"{name}.bias" in state:
            out = out + state[f"{name}.bias"]
        return out.unflatten(-1, (heads, -1))

    kv_heads = num_kv_heads or num_heads
    q = project("W_query", num_heads)
    # (b, T, g, hd) -> (b, T, h, hd): each key/value head next to its copies
    k, v = (
        project(n, kv_heads).repeat_interleave(num_heads // kv_heads, dim=2)
        for n in ("W_key", "W_value")
    )
    if rope is not None:  # (b, T, h, hd) -> (b, h, T, hd), turned, and back
        q, k = (
            reference_rope(t.transpose(1, 2), *rope).transpose(1, 2) for t in (q, k)
        )
    T, hd = x.shape[1], q.shape[-1]
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd)  # (b, h, T, T)
    later = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=1)
    if hidden is not None:
        later = later | hidden[:, None]  # (b, 1, T, T)
    weights = torch.softmax(scores.masked_fill(later, -math.inf), dim=-1)
    weights = weights.nan_to_num(0.0)  # a query with no visible key
    if weights_only:
        return weights
    heads = torch.einsum("bhqk,bkhd->bqhd", weights, v)  # (b, T, h, hd)
    merged = heads.flatten(-2)  # (b, T, d_out)
    return merged @ state["out_proj.weight"].T + state["out_proj.bias"]


def chapter_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """The weights, on the CPU, of a module that keeps W_query ... out_proj as
    nn.Linear."""
    return {
        f"{name}.{part}": weight.detach().cpu()
        for name in ("W_query", "W_key", "W_value", "out_proj")
        for part, weight in getattr(module, name).named_parameters()
    }


def assert_message_names(error: BaseException, *names: tuple[str, ...]) -> None:
    """The message names one spelling of each tuple of ``names``, as a whole
    word (``"4"`` is not in ``"48"``), in whatever wording."""
    message = str(error)
    for spellings in names:
        words = "|".join(re.escape(word) for word in spellings)
        found = re.search(rf"(?<!\w)(?:{words})(?!\w)", message, re.IGNORECASE)
        assert found, f"the message does not name {' or '.join(spellings)}: {message}"


def checks_called(run) -> list[str]:
    """The functions of attention/checks.py that ``run()`` calls, one name per call."""
    import attention.checks

    checks_file = attention.checks.__file__
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == checks_file:
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def reference_rope(
    x: torch.Tensor, position_ids: torch.Tensor, base: float, layout: str
) -> torch.Tensor:
    """Rotary position embeddings by the formula, apart from the package.

    For each position ``m`` a ``(hd, hd)`` rotation matrix is filled in with
    Python's ``math.cos`` and ``math.sin`` of ``m * base ** (-2i / hd)``:
    pair ``i`` is features ``(i, i + hd/2)`` for ``"half"``, ``(2i, 2i + 1)``
    for ``"interleaved"``. ``x`` ``(..., T, hd)``; ``position_ids`` ``(T,)``,
    or ``(b, T)`` with ``x`` ``(b, ..., T, hd)``. Computed in float64.
    """
    hd = x.shape[-1]
    pairs = [
        (i, i + hd // 2) if layout == "half" else (2 * i, 2 * i + 1)
        for i in range(hd // 2)
    ]

    def matrix(m: int) -> list[list[float]]:
        rot = [[0.0] * hd for _ in range(hd)]
        for i, (a, b) in enumerate(pairs):
            angle = m * base ** (-2 * i / hd)
            cos, sin = math.cos(angle), math.sin(angle)
            rot[a][a], rot[a][b], rot[b][a], rot[b][b] = cos, -sin, sin, cos
        return rot

    rows = position_ids.tolist()
    if position_ids.dim() == 1:
        rows = [rows]
    # (r, T, hd, hd): one matrix per position of each row of positions
    rotations = torch.tensor(
        [[matrix(m) for m in row] for row in rows], dtype=torch.float64
    ).reshape(len(rows), x.shape[-2], hd, hd)  # also when T = 0
    x64 = x.double().cpu()
    if position_ids.dim() == 1:  # the same positions for every sequence
        out = torch.einsum("tij,...tj->...ti", rotations[0], x64)
    else:  # row n of the batch at its own positions: (b, ..., T, hd)
        rest = math.prod(x.shape[1:-2])
        flat = x64.reshape(x.shape[0], rest, *x.shape[-2:])  # (b, rest, T, hd)
        out = torch.einsum("btij,brtj->brti", rotations, flat).reshape(x.shape)
    return out.to(x.dtype)

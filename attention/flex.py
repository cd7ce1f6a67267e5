"""FlexAttention as a second reference: the book's masks as mask_mod functions (beyond).

Shape legend: ``b`` batch size, ``h`` heads, ``Tq`` queries, ``Tk`` keys,
``hd`` ``head_dim``.

PyTorch's FlexAttention (``torch.nn.attention.flex_attention``) takes a mask
as a function, a ``mask_mod(b, h, q_idx, kv_idx)`` that says whether query
``q_idx`` of batch row ``b`` and head ``h`` may attend to key ``kv_idx``.
Its polarity is the opposite of this package's masks: ``True`` = *attend*.
Here is every mask the book builds, written that way, independently of the
package's own masks, so the two can be compared:

- :func:`causal_mask_mod` (:func:`~attention.causal_mask`),
- :func:`padding_mask_mod` (:func:`~attention.key_padding_mask`),
- :func:`padded_causal_mask_mod` (:func:`~attention.padded_causal_mask`),
- :func:`window_mask_mod` (:func:`~attention.window_mask`, with or without
  sink tokens).

FlexAttention's indices count queries from 0; the package aligns queries to
the end of the keys, so a ``mask_mod`` here adds ``Tk - Tq`` to ``q_idx``.
:func:`flex_mask` turns a ``mask_mod`` into this package's polarity, and
:func:`flex_reference` runs FlexAttention with it, eagerly, on the CPU.
:func:`flex_cpu_limits` measures what that costs on the machine it runs on.

Importing ``torch.nn.attention.flex_attention`` takes seconds (it loads
TorchDynamo), so only the functions that call FlexAttention import it.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .checks import check_flag, check_integer, check_positive

#: ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor``, ``True`` = attend.
MaskMod = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor
]

# FlexAttention warns on every eager call that it materialises the scores;
# that is what a reference is for, so the functions below silence it.
EAGER_WARNING = "flex_attention called without torch.compile"


def causal_mask_mod(num_queries: int, num_keys: int) -> MaskMod:
    """The causal mask, bottom-right aligned, as a ``mask_mod`` (``True`` = attend).

    Book section: Beyond the chapter, Bounded context. Query ``q_idx`` sits
    at position ``q_idx + Tk - Tq`` and may see every key up to it.

    Example:
        >>> keep = causal_mask_mod(2, 4)
        >>> keep(0, 0, torch.tensor(0), torch.arange(4))
        tensor([ True,  True,  True, False])
    """
    check_integer("num_queries", num_queries, smallest=0)
    check_integer("num_keys", num_keys, smallest=num_queries)
    offset = num_keys - num_queries

    def causal(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx + offset

    return causal


def padding_mask_mod(attention_mask: torch.Tensor) -> MaskMod:
    """A padded batch's mask as a ``mask_mod``: every query sees the real keys
    of its own row (``attention_mask[b, kv_idx]`` is 1), no padding.

    Example:
        >>> keep = padding_mask_mod(torch.tensor([[1, 1, 0]]))
        >>> keep(torch.tensor(0), 0, torch.tensor(2), torch.arange(3))
        tensor([ True,  True, False])
    """
    real = attention_mask.bool()  # (b, T)

    def not_padding(b, h, q_idx, kv_idx):
        return real[b, kv_idx]

    return not_padding


def padded_causal_mask_mod(attention_mask: torch.Tensor) -> MaskMod:
    """Causal and padded: key ``kv_idx`` is real and not after ``q_idx``."""
    real = attention_mask.bool()  # (b, T)

    def causal_not_padding(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & real[b, kv_idx]

    return causal_not_padding


def window_mask_mod(
    num_queries: int, num_keys: int, window: int | None, sink_tokens: int = 0
) -> MaskMod:
    """A causal sliding window with sink tokens, as a ``mask_mod``.

    Book section: Beyond the chapter, Bounded context. The query at position
    ``p = q_idx + Tk - Tq`` attends to the ``window`` keys ending at its own
    (``p - kv_idx < window``) and to the first ``sink_tokens`` keys, never
    to a later key. ``window=None``: all the past.

    Example:
        >>> keep = window_mask_mod(1, 6, window=2, sink_tokens=1)
        >>> keep(0, 0, torch.tensor(0), torch.arange(6))  # position 5
        tensor([ True, False, False, False,  True,  True])
    """
    check_integer("num_queries", num_queries, smallest=0)
    check_integer("num_keys", num_keys, smallest=num_queries)
    if window is not None:
        check_integer("window", window, smallest=1)
    check_integer("sink_tokens", sink_tokens, smallest=0)
    offset = num_keys - num_queries
    reach = num_keys + 1 if window is None else window  # None: more than all

    def sliding_window(b, h, q_idx, kv_idx):
        position = q_idx + offset
        in_window = position - kv_idx < reach
        is_sink = kv_idx < sink_tokens
        return (kv_idx <= position) & (in_window | is_sink)

    return sliding_window


def flex_mask(mask_mod: MaskMod, batch: int, num_queries: int, num_keys: int):
    """The package's polarity of a ``mask_mod``: ``True`` where attention is
    forbidden, built by FlexAttention's own ``create_mask``, for one head
    (the book's masks are the same for every head).

    Shape:
        Output: ``(batch, 1, Tq, Tk)``, boolean.
    """
    from torch.nn.attention.flex_attention import create_mask

    check_positive(batch=batch)
    keep = create_mask(mask_mod, batch, 1, num_queries, num_keys, device="cpu")
    return ~keep


def flex_reference(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask_mod: MaskMod,
) -> tuple[torch.Tensor, torch.Tensor]:
    """FlexAttention's output and log-sum-exp under ``mask_mod``, eagerly.

    Book section: Beyond the chapter, Bounded context. A second reference
    for the package's masked attention: ``flex_attention`` with a block mask
    made from ``mask_mod``, run without ``torch.compile`` (it then computes
    the whole score matrix, as a reference may). No backward on the CPU.

    Shape:
        queries: ``(b, h, Tq, hd)``
        keys: ``(b, h, Tk, hd)``
        values: ``(b, h, Tk, hd)``
        Output: ``(b, h, Tq, hd)`` and ``(b, h, Tq)``
    """
    from torch.nn.attention.flex_attention import (
        AuxRequest,
        create_block_mask,
        flex_attention,
    )

    b, h, num_queries, _ = queries.shape
    num_keys = keys.shape[-2]
    block_mask = create_block_mask(
        mask_mod, b, h, num_queries, num_keys, device=queries.device
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=EAGER_WARNING)
        out, aux = flex_attention(
            queries,
            keys,
            values,
            block_mask=block_mask,
            return_aux=AuxRequest(lse=True),
        )
    return out, aux.lse


def _median_seconds(run: Callable[[], object], rounds: int) -> float:
    """The median wall time of ``rounds`` calls of ``run``, after one warm-up."""
    run()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def flex_cpu_limits(
    num_tokens: int = 256, rounds: int = 5, compile: bool = False
) -> dict[str, object]:
    """What FlexAttention can and cannot do on this machine's CPU, measured.

    Book section: Beyond the chapter, Bounded context. In float32, one
    sequence of ``num_tokens`` tokens, 4 heads of 64 dimensions, causal:

    - ``backward_error``: what a backward pass through eager FlexAttention
      raises on the CPU (``None`` if it runs);
    - ``flex_seconds`` and ``sdpa_seconds``: the median time of a forward
      pass, eager FlexAttention and ``F.scaled_dot_product_attention``;
    - ``first_call_seconds``: the first FlexAttention call of the process,
      block mask included (it loads and traces its machinery);
    - ``rounds``: how many timed calls each median is taken over;
    - with ``compile=True`` only, ``compile_seconds``, the first call of
      ``torch.compile(flex_attention)`` (it generates and builds C++), and
      ``compiled_seconds``, the median after it. That takes minutes on a
      2-core CPU: no page calls it.
    """
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    check_positive(num_tokens=num_tokens, rounds=rounds)
    check_flag("compile", compile)
    gen = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 1, 4, num_tokens, 64, generator=gen).unbind(0)
    causal = causal_mask_mod(num_tokens, num_tokens)
    start = time.perf_counter()
    block_mask = create_block_mask(causal, None, None, num_tokens, num_tokens, "cpu")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=EAGER_WARNING)
        flex_attention(q, k, v, block_mask=block_mask)
        first_call = time.perf_counter() - start
        flex_seconds = _median_seconds(
            lambda: flex_attention(q, k, v, block_mask=block_mask), rounds
        )
        backward_error = None
        try:
            q_grad = q.detach().requires_grad_()  # q itself stays out of autograd
            out = flex_attention(q_grad, k, v, block_mask=block_mask)
            out.sum().backward()
        except (NotImplementedError, RuntimeError) as error:
            backward_error = f"{type(error).__name__}: {error}"
    sdpa_seconds = _median_seconds(
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), rounds
    )
    limits = {
        "backward_error": backward_error,
        "flex_seconds": flex_seconds,
        "sdpa_seconds": sdpa_seconds,
        "first_call_seconds": first_call,
        "rounds": rounds,
    }
    if compile:
        compiled = torch.compile(flex_attention)
        start = time.perf_counter()
        compiled(q, k, v, block_mask=block_mask)
        limits["compile_seconds"] = time.perf_counter() - start
        limits["compiled_seconds"] = _median_seconds(
            lambda: compiled(q, k, v, block_mask=block_mask), rounds
        )
    return limits

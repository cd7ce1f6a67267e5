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

import json
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

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


def _round_seconds(run: Callable[[], object], rounds: int) -> list[float]:
    """The wall time of each of ``rounds`` calls of ``run``, after one warm-up."""
    run()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def flex_cpu_limits(
    num_tokens: int = 256, rounds: int = 5, compile: bool = False
) -> dict[str, object]:
    """What FlexAttention can and cannot do on this machine's CPU, measured.

    Book section: Beyond the chapter, Bounded context. In float32, one
    sequence of ``num_tokens`` tokens, 4 heads of 64 dimensions, causal:

    - ``backward_error``: what a backward pass through eager FlexAttention
      raises on the CPU (``None`` if it runs);
    - ``flex_seconds`` and ``sdpa_seconds``: the median time of a forward
      pass, eager FlexAttention and ``F.scaled_dot_product_attention``, and
      ``flex_rounds_s``, ``sdpa_rounds_s``: every call's time, for
      ``attention.bench.compare``;
    - ``first_call_seconds``: the first FlexAttention call of the process,
      block mask included (it loads and traces its machinery);
    - ``rounds``: how many timed calls each median is taken over;
    - with ``compile=True`` only, ``compile_seconds``, the first call of
      ``torch.compile(flex_attention)`` (it generates and builds C++), and
      ``compiled_seconds``, the median after it (``compiled_rounds_s``).
      That takes many seconds on a 2-core CPU, and minutes when the machine
      is busy: no page calls it; the page reads the run ``python -m
      attention.flex`` stored (:func:`stored_flex_run`).
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
        flex_rounds = _round_seconds(
            lambda: flex_attention(q, k, v, block_mask=block_mask), rounds
        )
        backward_error = None
        try:
            q_grad = q.detach().requires_grad_()  # q itself stays out of autograd
            out = flex_attention(q_grad, k, v, block_mask=block_mask)
            out.sum().backward()
        except (NotImplementedError, RuntimeError) as error:
            backward_error = f"{type(error).__name__}: {error}"
    sdpa_rounds = _round_seconds(
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), rounds
    )
    limits = {
        "backward_error": backward_error,
        "flex_seconds": statistics.median(flex_rounds),
        "sdpa_seconds": statistics.median(sdpa_rounds),
        "flex_rounds_s": flex_rounds,
        "sdpa_rounds_s": sdpa_rounds,
        "first_call_seconds": first_call,
        "rounds": rounds,
    }
    if compile:
        compiled = torch.compile(flex_attention)
        start = time.perf_counter()
        compiled(q, k, v, block_mask=block_mask)
        limits["compile_seconds"] = time.perf_counter() - start
        compiled_rounds = _round_seconds(
            lambda: compiled(q, k, v, block_mask=block_mask), rounds
        )
        limits["compiled_seconds"] = statistics.median(compiled_rounds)
        limits["compiled_rounds_s"] = compiled_rounds
    return limits


#: Where ``python -m attention.flex`` stores its run, in the package.
STORED_RUN = "_data/flex-cpu.json"


def stored_flex_run() -> dict:
    """The run of :func:`flex_cpu_limits` with ``compile=True`` that
    ``python -m attention.flex`` measured on a quiet machine and stored with
    the package: the limits, and under ``"meta"`` when and where.

    Book section: Beyond the chapter, Bounded context. Compiling
    FlexAttention takes too long for every build of the book.

    >>> run = stored_flex_run()
    >>> run["compile_seconds"] > run["compiled_seconds"]
    True
    """
    return json.loads(files("attention").joinpath(STORED_RUN).read_text())


def main() -> None:
    """Measure :func:`flex_cpu_limits` with ``compile=True`` on one torch
    thread (as the book's kernels run) and store it where
    :func:`stored_flex_run` reads it. Run it on a quiet machine.

    The compiler keeps what it built in a cache on disk, and a second
    process finds it there; a reader's first compile does not. So the run
    compiles into a new, empty cache (``TORCHINDUCTOR_CACHE_DIR``).
    """
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as empty_cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = empty_cache
        limits = flex_cpu_limits(num_tokens=256, rounds=9, compile=True)
    limits["meta"] = {
        "command": "python -m attention.flex",
        "created_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "compiler_cache": "empty at the start (a new TORCHINDUCTOR_CACHE_DIR)",
    }
    path = Path(__file__).parent / STORED_RUN
    path.write_text(json.dumps(limits, indent=1) + "\n")
    print(f"wrote {path}: compiling took {limits['compile_seconds']:.1f} s")


if __name__ == "__main__":
    main()

"""The sizes of one benchmark run, and the modules it times."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ..multihead import MultiHeadAttentionWrapper
from ..variants import VARIANTS, load_variant, variant_info

#: The registry name every ratio is taken against: the chapter's class.
REFERENCE = "mha"
#: The chapter's 3.6.1 class, timed beside the registry (not interchangeable:
#: its ``d_out`` is the width of one head).
WRAPPER = "wrapper"
#: What is timed for each variant.
MODES = ("forward", "forward+backward")


def _all_variants() -> tuple[str, ...]:
    return (*VARIANTS, WRAPPER)


@dataclass(frozen=True)
class BenchConfig:
    """Sizes and repetitions of one benchmark run.

    The defaults are GPT-2 (small) sizes: a batch of 8 sequences of 1024
    tokens, 768 features, 12 heads. ``variants`` defaults to every name of
    :data:`attention.VARIANTS`, then ``"wrapper"``, read when the config is
    made.
    """

    batch: int = 8
    tokens: int = 1024
    d_model: int = 768
    heads: int = 12
    repeats: int = 5
    warmup: int = 1
    matmul_size: int = 2048
    memory_tokens: tuple[int, ...] = (1024, 2048, 4096, 8192)
    #: Lengths of the training-step memory (forward and backward); the
    #: chapter's class needs four times its 4096 figure at 8192 tokens.
    train_memory_tokens: tuple[int, ...] = (1024, 2048, 4096)
    memory_batch: int = 1
    variants: tuple[str, ...] = field(default_factory=_all_variants)
    threads: int = field(default_factory=torch.get_num_threads)
    seed: int = 0
    #: Variants from outside the package, as ``module:Class`` or
    #: ``name=module:Class``: imported and registered first, then timed with
    #: the others (``--variant`` on the command line).
    plugins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        loaded = [load_variant(spec) for spec in self.plugins]
        missing = tuple(name for name in loaded if name not in self.variants)
        if missing:  # timed after the registry's entries, before the wrapper
            own = tuple(v for v in self.variants if v != WRAPPER)
            tail = (WRAPPER,) if WRAPPER in self.variants else ()
            object.__setattr__(self, "variants", (*own, *missing, *tail))
        unknown = [v for v in self.variants if v not in _all_variants()]
        if unknown:
            raise ValueError(
                f"unknown variants {unknown}; expected names from "
                f"{list(_all_variants())}"
            )
        if REFERENCE not in self.variants:
            raise ValueError(
                f"variants must include {REFERENCE!r}, the reference of every "
                f"ratio, got {list(self.variants)}"
            )

    @classmethod
    def quick(cls, **overrides) -> BenchConfig:
        """Small sizes that run in seconds (for the book page, or a smoke test)."""
        small = dict(
            batch=2,
            tokens=256,
            d_model=256,
            heads=4,
            repeats=5,
            matmul_size=512,
            memory_tokens=(256, 512, 1024),
            train_memory_tokens=(256, 512, 1024),
        )
        return cls(**{**small, **overrides})


def build(variant: str, config: BenchConfig, context_length: int) -> nn.Module:
    """A seeded module of ``variant`` at the config's sizes, in eval mode."""
    torch.manual_seed(config.seed)
    d, h = config.d_model, config.heads
    if variant == WRAPPER:
        module = MultiHeadAttentionWrapper(d, d // h, context_length, 0.0, h)
    else:
        # through the entry's VariantInfo: its extra constructor keywords too
        module = variant_info(variant).build(
            VARIANTS[variant], d, d, context_length, 0.0, h
        )
    return module.eval()

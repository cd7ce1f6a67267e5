"""Attention mechanisms, coded as in chapter 3 of *Build a Large Language Model
(From Scratch)*.

One module per idea of the chapter:

- :mod:`attention.data`: the running example (3.3.1)
- :mod:`attention.simple`: attention without trainable weights (3.3)
- :mod:`attention.self_attention`: ``SelfAttention_v1`` and ``_v2`` (3.4)
- :mod:`attention.causal`: causal masks and ``CausalAttention`` (3.5)
- :mod:`attention.window`: sliding-window and sink-token masks, bounded
  context (beyond the chapter)
- :mod:`attention.multihead`: ``MultiHeadAttentionWrapper`` and
  ``MultiHeadAttention`` (3.6)
- :mod:`attention.cross`: ``CrossAttention`` (beyond the chapter)
- :mod:`attention.efficient`: faster drop-in variants of ``MultiHeadAttention``
  (beyond the chapter)
- :mod:`attention.flash`: FlashAttention from scratch, online softmax and
  tiles, and ``FlashMultiHeadAttention`` (beyond the chapter)
- :mod:`attention.variants`: ``VARIANTS``, the registry of every class
  interchangeable with ``MultiHeadAttention``, ``register`` and
  ``copy_weights``; :mod:`attention.contract` writes down what an entry must
  do; :mod:`attention.bench` times the registry
- :mod:`attention.padding`: padding masks and ``PaddedMultiHeadAttention``,
  for batches of sequences of different lengths (beyond the chapter)
- :mod:`attention.learned`: a tiny model that trains ``MultiHeadAttention``
  on a task with a known answer (beyond the chapter)
- :mod:`attention.kv_cache`: the KV cache and attention that reads it (beyond)
- :mod:`attention.generation`: greedy generation, with and without the cache (beyond)
- :mod:`attention.gqa`: grouped-query and multi-query attention (beyond the
  chapter)
- :mod:`attention.rope`: rotary position embeddings, ``apply_rope`` and
  ``RotaryMultiHeadAttention`` (beyond the chapter)
- :mod:`attention.extrapolation`: what positions buy: learned, rotary and no
  positions trained, then scored past their training length (beyond)
"""

from .causal import CausalAttention, causal_mask, mask_with_neg_inf, renormalize_masked
from .contract import VariantInfo
from .cross import CrossAttention
from .data import EXAMPLE_WORDS, example_inputs
from .efficient import (
    FusedQKVMultiHeadAttention,
    SDPAMultiHeadAttention,
    TorchMultiHeadAttention,
)
from .extrapolation import accuracy_by_length
from .flash import (
    FlashAttentionFunction,
    FlashMultiHeadAttention,
    attention_over_key_tiles,
    backward_delta,
    flash_attention,
    flash_attention_backward,
    online_softmax,
    online_softmax_stats,
    softmax_backward,
    softmax_three_pass,
    tile_backward,
    weights_from_lse,
)
from .generation import decode_step, generate_greedy, generate_greedy_cached
from .gqa import GroupedQueryAttention, mean_pool_kv_heads, repeat_kv
from .kv_cache import (
    MODEL_WINDOWS,
    KVCache,
    cached_attention,
    kv_cache_bytes,
    kv_cache_bytes_by_layer,
    layer_windows,
)
from .learned import (
    TinyAttentionModel,
    attention_weights,
    order_blind_accuracy,
    previous_token_data,
    previous_token_mass,
    token_accuracy,
    train_model,
)
from .multihead import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    count_parameters,
    parameter_breakdown,
)
from .padding import (
    PaddedMultiHeadAttention,
    key_padding_mask,
    pad_sequences,
    padded_causal_mask,
)
from .rope import (
    RotaryMultiHeadAttention,
    apply_rope,
    rope_angles,
    rope_layout_state_dict,
    rope_permutation,
)
from .self_attention import SelfAttention_v1, SelfAttention_v2, copy_weights_v2_to_v1
from .simple import dot_scores, simple_self_attention, softmax_naive, weighted_sum
from .variants import VARIANTS, copy_weights, register
from .window import window_mask

__all__ = [
    "EXAMPLE_WORDS",
    "MODEL_WINDOWS",
    "VARIANTS",
    "CausalAttention",
    "CrossAttention",
    "FlashAttentionFunction",
    "FlashMultiHeadAttention",
    "FusedQKVMultiHeadAttention",
    "GroupedQueryAttention",
    "KVCache",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "PaddedMultiHeadAttention",
    "RotaryMultiHeadAttention",
    "SDPAMultiHeadAttention",
    "SelfAttention_v1",
    "SelfAttention_v2",
    "TinyAttentionModel",
    "TorchMultiHeadAttention",
    "VariantInfo",
    "accuracy_by_length",
    "apply_rope",
    "attention_over_key_tiles",
    "attention_weights",
    "backward_delta",
    "cached_attention",
    "causal_mask",
    "copy_weights",
    "copy_weights_v2_to_v1",
    "count_parameters",
    "decode_step",
    "dot_scores",
    "example_inputs",
    "key_padding_mask",
    "flash_attention",
    "flash_attention_backward",
    "generate_greedy",
    "generate_greedy_cached",
    "kv_cache_bytes",
    "kv_cache_bytes_by_layer",
    "layer_windows",
    "mask_with_neg_inf",
    "mean_pool_kv_heads",
    "online_softmax",
    "online_softmax_stats",
    "order_blind_accuracy",
    "pad_sequences",
    "padded_causal_mask",
    "parameter_breakdown",
    "previous_token_data",
    "previous_token_mass",
    "register",
    "renormalize_masked",
    "repeat_kv",
    "rope_angles",
    "rope_layout_state_dict",
    "rope_permutation",
    "simple_self_attention",
    "softmax_backward",
    "softmax_three_pass",
    "softmax_naive",
    "tile_backward",
    "token_accuracy",
    "train_model",
    "weighted_sum",
    "weights_from_lse",
    "window_mask",
]

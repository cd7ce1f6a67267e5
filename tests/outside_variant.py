"""A multi-head attention written outside the package, as a stranger would.

It imports only public names (``torch``, ``attention.register``), stores its
weights its own way (one ``(3, d_out, d_in)`` tensor for the three
projections), checks its input in its own words (a ``TypeError`` for what is
not a tensor, as torch raises), and joins the registry with the last line.
``tests/test_contract_catches.py`` runs the whole contract suite and the
benchmark on it.
"""

import math

import torch
from torch import nn

import attention


class EinsumAttention(nn.Module):
    """Causal multi-head attention with einsum and a stacked projection."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        for name, value in [("d_in", d_in), ("d_out", d_out), ("num_heads", num_heads),
                            ("context_length", context_length)]:  # fmt: skip
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} should be an integer >= 1, not {value!r}")
        if d_out % num_heads:
            raise ValueError(f"num_heads={num_heads} does not split d_out={d_out}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout is a probability below 1, not {dropout!r}")
        self.d_in, self.d_out, self.num_heads = d_in, d_out, num_heads
        self.context_length, self.head_dim = context_length, d_out // num_heads
        bound = 1 / math.sqrt(d_in)  # nn.Linear's initialisation
        self.qkv = nn.Parameter(torch.empty(3, d_out, d_in).uniform_(-bound, bound))
        self.qkv_bias = nn.Parameter(torch.zeros(3, d_out)) if qkv_bias else None
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"the input should be a Tensor, not a {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.d_in:
            raise ValueError(
                f"the input should be 3-D (batch, tokens, d_in={self.d_in}), "
                f"got shape {tuple(x.shape)}"
            )
        if x.shape[1] > self.context_length:
            raise ValueError(
                f"{x.shape[1]} tokens exceed context_length={self.context_length}"
            )
        if x.dtype != self.qkv.dtype:
            raise ValueError(f"the input is {x.dtype}, the weights {self.qkv.dtype}")
        q, k, v = torch.einsum("btd,pod->pbto", x, self.qkv)  # 3 x (b, T, d_out)
        if self.qkv_bias is not None:
            q, k, v = q + self.qkv_bias[0], k + self.qkv_bias[1], v + self.qkv_bias[2]
        q, k, v = (t.unflatten(-1, (self.num_heads, self.head_dim)) for t in (q, k, v))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        T = x.shape[1]
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        weights = self.dropout(scores.masked_fill(future, -torch.inf).softmax(dim=-1))
        return self.out_proj(torch.einsum("bhqk,bkhd->bqhd", weights, v).flatten(-2))

    def mha_state_dict(self):
        state = {}
        for i, n in enumerate(("W_query", "W_key", "W_value")):
            state[f"{n}.weight"] = self.qkv[i].detach()
            if self.qkv_bias is not None:
                state[f"{n}.bias"] = self.qkv_bias[i].detach()
        out = {f"out_proj.{p}": w.detach() for p, w in self.out_proj.named_parameters()}
        return state | out

    def load_mha_state_dict(self, state):
        own = self.mha_state_dict()
        if set(state) != set(own):
            raise ValueError(f"expected the weights {sorted(own)}, got {sorted(state)}")
        with torch.no_grad():
            for name, weight in own.items():
                weight.copy_(state[name])  # views of the parameters


attention.register("einsum", EinsumAttention)

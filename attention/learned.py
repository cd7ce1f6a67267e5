"""Attention that has learned: a tiny model trained on a task with a known answer.

Book section: Beyond the chapter, Attention that has learned.

The task is "copy the previous token": at position ``i`` the model must
output the token that sat at position ``i - 1``. The right attention pattern
is known in advance: query ``i`` should put its weight on key ``i - 1``.
Position 0 has no previous token, so its target is ``IGNORE_INDEX`` and it
does not count in the loss or the accuracy.

Shape legend: ``b`` batch size, ``T`` ``num_tokens``, ``V`` ``vocab_size``,
``d`` ``d_model``, ``h`` ``num_heads``.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from .checks import (
    check_divides,
    check_integer,
    check_module,
    check_positions,
    check_positive,
    check_rope_options,
    check_seed,
    check_shapes,
    check_token_ids,
    check_training,
    check_values,
    check_window_layers,
    check_window_positions,
)
from .kv_cache import attend_cached
from .multihead import MultiHeadAttention
from .rope import RotaryMultiHeadAttention

#: Target value of positions that do not count (``F.cross_entropy``'s default).
IGNORE_INDEX = -100


class TinyAttentionModel(nn.Module):
    """Token embeddings, positions, multi-head attention, an output layer.

    Book section: Beyond the chapter, Attention that has learned. Each
    attention layer is the chapter's :class:`~attention.MultiHeadAttention`
    (causal, ``d_in = d_out = d_model``, no dropout), used as it is; each
    layer's output is the next one's input. The last output goes straight
    to a linear layer that scores every word of the vocabulary: no residual
    connection, no feed-forward block. The trained model of the page has
    one layer; generation tests use two, where the causal mask changes what
    the last position sees.

    Three kinds of positions (``positions``):

    - ``"learned"``: a table of ``context_length`` learned vectors, one
      added to each token embedding (GPT-2's way).
    - ``"rope"``: no table; every layer is a
      :class:`~attention.RotaryMultiHeadAttention`, which turns queries and
      keys by their positions before the scores (Llama's way,
      :func:`~attention.apply_rope`).
    - ``"none"``: the model sees which tokens came before, not in what order.

    Args:
        vocab_size: how many different token ids there are.
        d_model: width of the embeddings and of the attention layers; must
            be divisible by ``num_heads`` (with ``"rope"``, into an even
            ``head_dim``).
        context_length: the longest sequence the model accepts; also the
            number of learned position embeddings.
        num_heads: how many attention heads per layer.
        positions: ``"learned"``, ``"rope"`` or ``"none"``. Default:
            ``None``, which means ``"learned"`` (or what ``use_positions``
            says).
        num_layers: how many attention layers, one after the other.
            Default: ``1``.
        use_positions: the older spelling, kept so that existing code and
            saved widget configs run: ``True`` means ``positions="learned"``,
            ``False`` means ``"none"``. Give one of the two. Default: ``None``.
        rope_base: the base of RoPE's frequencies. Default: ``10000.0``.
        rope_layout: RoPE's layout, ``"half"`` or ``"interleaved"``.
            Default: ``"half"``.
        window: bounded context (Beyond the chapter, Bounded context): each
            query sees only the last ``window`` tokens, itself included.
            An integer for every layer, or one entry per layer, ``None``
            for a global layer (Gemma's local and global layers). Needs
            ``positions="rope"`` or ``"none"``: a learned table ends at
            ``context_length``, where a window would let generation go on.
            Default: ``None``, every layer sees the whole past.
        sink_tokens: how many first tokens every windowed layer keeps
            seeing, however far back (attention sinks). Default: ``0``.

    Shape:
        Input: ``(b, T)`` token ids in ``[0, vocab_size)``, ``T <= context_length``
        Output: ``(b, T, vocab_size)`` logits, one score per vocabulary entry

    Returns:
        The logits (from ``forward``); ``logits[:, i]`` predicts the target
        of position ``i``.

    Example:
        >>> _ = torch.manual_seed(123)
        >>> model = TinyAttentionModel(
        ...     vocab_size=10, d_model=8, context_length=6, num_heads=2
        ... )
        >>> token_ids = torch.tensor([[3, 1, 4, 1, 5, 9]])
        >>> logits = model(token_ids)
        >>> logits.shape
        torch.Size([1, 6, 10])
        >>> logits[0, 0, :3]
        tensor([-0.3411, -0.3151, -0.1658], grad_fn=<SliceBackward0>)
        >>> len(TinyAttentionModel(10, 8, 6, num_heads=2, num_layers=2).layers)
        2
        >>> rope = TinyAttentionModel(10, 8, 6, num_heads=2, positions="rope")
        >>> rope.pos_emb is None, type(rope.attn).__name__
        (True, 'RotaryMultiHeadAttention')
        >>> local = TinyAttentionModel(10, 8, 6, 2, "rope", 2, window=[3, None])
        >>> local.windows, local(token_ids).shape  # a local layer, a global one
        ((3, None), torch.Size([1, 6, 10]))
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        context_length: int,
        num_heads: int,
        positions: str | None = None,
        num_layers: int = 1,
        *,
        use_positions: bool | None = None,
        rope_base: float = 10000.0,
        rope_layout: str = "half",
        window: int | list[int | None] | None = None,
        sink_tokens: int = 0,
    ) -> None:
        super().__init__()
        check_positive(
            vocab_size=vocab_size,
            d_model=d_model,
            context_length=context_length,
            num_layers=num_layers,
        )
        check_divides(("num_heads", num_heads), ("d_model", d_model))
        check_rope_options(rope_base, rope_layout)
        positions = check_positions(positions, use_positions)
        self.windows = check_window_layers(window, sink_tokens, num_layers)
        check_window_positions(self.windows, positions)
        self.sink_tokens = sink_tokens
        self.vocab_size = vocab_size
        self.context_length = context_length
        self.positions = positions
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = None  # a table only for learned positions
        if positions == "learned":
            self.pos_emb = nn.Embedding(context_length, d_model)
        if positions == "rope":
            layer = partial(
                RotaryMultiHeadAttention, base=rope_base, layout=rope_layout
            )
        else:
            layer = MultiHeadAttention
        self.layers = nn.ModuleList(
            layer(d_model, d_model, context_length, dropout=0.0, num_heads=num_heads)
            for _ in range(num_layers)
        )
        self.out_head = nn.Linear(d_model, vocab_size)

    @property
    def attn(self) -> MultiHeadAttention:
        """The first attention layer: the only one of a one-layer model."""
        return self.layers[0]

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        device = self.tok_emb.weight.device
        check_token_ids(token_ids, self.vocab_size, self.context_length, device)
        return self.logits(token_ids)

    def logits(self, token_ids: torch.Tensor) -> torch.Tensor:
        """The model's computation, the body of ``forward``: ids in, logits out.

        Unchecked: ``forward`` checks the ids, then calls it. So do
        :func:`train_model` and :func:`token_accuracy`, which check all the
        data once and then call ``logits`` on every batch, without reading
        the ids' values again at each step.
        """
        x = self.embed(token_ids)  # (b, T) -> (b, T, d)
        for i, layer in enumerate(self.layers):
            # (b, T, d): context vectors, the next layer's input. A rotary
            # layer turns its queries and keys at positions 0 .. T - 1.
            if self.windows[i] is None:
                x = layer(x)
            else:  # the layer's weights under its window-and-sinks mask
                x = attend_cached(
                    layer,
                    x,
                    None,
                    i,
                    window=self.windows[i],
                    sink_tokens=self.sink_tokens,
                )
        return self.out_head(x)  # (b, T, d) -> (b, T, V)

    def embed(
        self, token_ids: torch.Tensor, position_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Token embeddings, plus the embeddings of their positions if learned.

        With ``"rope"`` or ``"none"`` positions, only the token embeddings:
        a rotary model puts positions into each layer instead. Unchecked:
        ``forward`` and generation check their input first.
        ``position_ids`` ``(b, T)`` gives each token's position; the default
        is ``0, 1, ..., T - 1``. Generation passes where each row's real
        tokens are, which a KV cache or left padding shifts
        (:func:`~attention.decode_step`).
        """
        x = self.tok_emb(token_ids)  # (b, T) -> (b, T, d)
        if self.pos_emb is not None:
            if position_ids is None:
                position_ids = torch.arange(token_ids.shape[1], device=x.device)
            x = x + self.pos_emb(position_ids)  # (b, T, d) + (b, T, d) or (T, d)
        return x


def previous_token_data(
    num_sequences: int, context_length: int, vocab_size: int, *, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token sequences and their "copy the previous token" targets.

    Book section: Beyond the chapter, Attention that has learned. Every token
    is drawn uniformly from the vocabulary, independently of the others, so
    nothing but the token at ``i - 1`` tells the target of position ``i``.

    Args:
        num_sequences: how many sequences.
        context_length: tokens per sequence, at least 2.
        vocab_size: token ids are drawn from ``[0, vocab_size)``, at least 2.
        seed: seed of the generator that draws the tokens. Default: ``0``.

    Shape:
        Both outputs: ``(num_sequences, context_length)``

    Returns:
        ``(token_ids, targets)``: ``targets[:, i] = token_ids[:, i - 1]`` for
        ``i >= 1``, and ``targets[:, 0] = IGNORE_INDEX``.

    Example:
        >>> token_ids, targets = previous_token_data(2, 5, vocab_size=10, seed=1)
        >>> token_ids
        tensor([[5, 9, 4, 8, 3],
                [3, 1, 1, 9, 2]])
        >>> targets
        tensor([[-100,    5,    9,    4,    8],
                [-100,    3,    1,    1,    9]])
    """
    check_positive(num_sequences=num_sequences)
    check_integer("context_length", context_length, smallest=2)
    check_integer("vocab_size", vocab_size, smallest=2)
    check_seed(seed)
    g = torch.Generator().manual_seed(int(seed))  # it refuses a NumPy integer
    token_ids = torch.randint(vocab_size, (num_sequences, context_length), generator=g)
    targets = torch.full_like(token_ids, IGNORE_INDEX)
    targets[:, 1:] = token_ids[:, :-1]  # (b, T - 1): the token one step back
    return token_ids, targets


def train_model(
    model: TinyAttentionModel,
    token_ids: torch.Tensor,
    targets: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float = 0.5,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` by plain gradient descent; return the loss of every step.

    Book section: Beyond the chapter, Attention that has learned. Each step
    draws ``batch_size`` sequences (with a generator seeded by ``seed``, so
    a run is repeatable), computes the cross-entropy of the logits against
    ``targets`` (positions marked ``IGNORE_INDEX`` are skipped), and moves
    every parameter a step of size ``lr`` against its gradient. No
    optimizer object, no momentum: the whole update is one line. The model
    is left in eval mode.

    Args:
        model: the :class:`TinyAttentionModel` to train.
        token_ids: the training sequences.
        targets: the target of every position, ``IGNORE_INDEX`` where none.
        steps: how many gradient steps.
        batch_size: sequences per step, at most ``N``.
        lr: the learning rate, the size of each step. Default: ``0.5``.
        seed: seed of the generator that picks the batches. Default: ``0``.

    Shape:
        token_ids, targets: ``(N, T)``

    Returns:
        The loss of each step's batch, before that step's update (a list
        of ``steps`` floats).

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(8, 16, context_length=6, num_heads=2)
        >>> token_ids, targets = previous_token_data(64, 6, vocab_size=8)
        >>> losses = train_model(model, token_ids, targets, steps=20, batch_size=16)
        >>> len(losses), round(losses[0], 2), round(losses[-1], 2)
        (20, 2.09, 1.17)
    """
    check_training(
        model,
        token_ids,
        targets,
        steps,
        batch_size,
        lr,
        seed,
        model_type=TinyAttentionModel,
        ignore_index=IGNORE_INDEX,
    )
    g = torch.Generator().manual_seed(int(seed))  # it refuses a NumPy integer
    model.train()
    losses = []
    for _ in range(steps):
        # batch_size random sequences: (N, T) -> (b, T)
        rows = torch.randperm(len(token_ids), generator=g)[:batch_size]
        logits = model.logits(token_ids[rows])  # (b, T) -> (b, T, V), checked above
        loss = nn.functional.cross_entropy(
            logits.flatten(0, 1),  # (b, T, V) -> (b * T, V)
            targets[rows].flatten(),  # (b, T) -> (b * T,)
            ignore_index=IGNORE_INDEX,
        )
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= lr * param.grad  # one step downhill
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def token_accuracy(
    model: TinyAttentionModel, token_ids: torch.Tensor, targets: torch.Tensor
) -> float:
    """Fraction of counted positions where the highest logit is the target.

    Book section: Beyond the chapter, Attention that has learned. Positions
    whose target is ``IGNORE_INDEX`` are not counted.

    Args:
        model: the :class:`TinyAttentionModel` to score.
        token_ids: the sequences to score.
        targets: the target of every position.

    Shape:
        token_ids, targets: ``(b, T)``

    Returns:
        A float in ``[0, 1]``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(4, 8, context_length=5, num_heads=2)
        >>> token_ids, targets = previous_token_data(100, 5, vocab_size=4)
        >>> token_accuracy(model, token_ids, targets)
        0.3425
    """
    check_training(
        model,
        token_ids,
        targets,
        model_type=TinyAttentionModel,
        ignore_index=IGNORE_INDEX,
    )
    predicted = model.logits(token_ids).argmax(dim=-1)  # (b, T, V) -> (b, T)
    counted = targets != IGNORE_INDEX  # (b, T)
    return (predicted[counted] == targets[counted]).double().mean().item()


@torch.no_grad()
def attention_weights(
    model: TinyAttentionModel, token_ids: torch.Tensor
) -> torch.Tensor:
    """The attention weights of ``model.attn`` for ``token_ids``, per head.

    Book section: Beyond the chapter, Attention that has learned.
    :class:`~attention.MultiHeadAttention` returns only context vectors. Its
    ``dropout`` submodule, though, is called on the attention weights, so a
    forward hook on it sees them without any change to the class. The hook
    is removed again before the function returns.

    Args:
        model: a :class:`TinyAttentionModel` (or any module whose ``attn``
            is a :class:`~attention.MultiHeadAttention`).
        token_ids: the sequences to run.

    Shape:
        token_ids: ``(b, T)``
        Output: ``(b, h, T, T)``: ``[n, k, i, j]`` is how much query ``i``
            of head ``k`` takes from key ``j`` in sequence ``n``

    Returns:
        The weights after the causal mask and the softmax.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(4, 8, context_length=5, num_heads=2)
        >>> weights = attention_weights(model, torch.tensor([[0, 1, 2, 3]]))
        >>> weights.shape
        torch.Size([1, 2, 4, 4])
        >>> weights[0, 0]
        tensor([[1.0000, 0.0000, 0.0000, 0.0000],
                [0.6748, 0.3252, 0.0000, 0.0000],
                [0.2284, 0.3367, 0.4349, 0.0000],
                [0.2341, 0.1832, 0.1054, 0.4773]])
    """
    check_module("model", model)
    check_module("model.attn", getattr(model, "attn", None), MultiHeadAttention)
    seen = []

    def keep_input(module, args, output):
        seen.append(args[0])  # the input of dropout: (b, h, T, T)

    handle = model.attn.dropout.register_forward_hook(keep_input)
    try:
        model(token_ids)
    finally:
        handle.remove()
    return seen[0]


def previous_token_mass(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight that query ``i`` puts on key ``i - 1``, for each head.

    Book section: Beyond the chapter, Attention that has learned. Averaged
    over the batch and over the queries ``i = 1 .. T - 1`` (query 0 has no
    previous token). 1 means the head attends to the previous token only.

    Args:
        attn_weights: the weights from :func:`attention_weights`.

    Shape:
        attn_weights: ``(b, h, T, T)`` with ``b >= 1`` and ``T >= 2``
        Output: ``(h,)``

    Returns:
        One number in ``[0, 1]`` per head.

    Example:
        >>> w = torch.zeros(1, 2, 3, 3)
        >>> w[0, 0] = torch.tensor([[1.0, 0, 0], [1, 0, 0], [0, 1, 0]])  # previous
        >>> w[0, 1] = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1]])  # itself
        >>> previous_token_mass(w)
        tensor([1., 0.])
    """
    check_shapes(attn_weights=(attn_weights, "b h T T"))
    check_integer("the batch size b of attn_weights", attn_weights.shape[0], 1)
    check_integer("the num_tokens T of attn_weights", attn_weights.shape[-1], 2)
    # Entries [..., i, i - 1] for i = 1 .. T - 1: one below the main diagonal
    # (b, h, T, T) -> (b, h, T - 1)
    below = attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    return below.mean(dim=(0, 2))  # (b, h, T - 1) -> (h,)


def order_blind_accuracy(token_ids: torch.Tensor, vocab_size: int) -> float:
    """The best accuracy on the task for a model that cannot see token order.

    Book section: Beyond the chapter, Attention that has learned. Suppose a
    model knows, for position ``i``, only *which* tokens sit at positions
    ``0 .. i - 1`` (a multiset), not in what order. Every order of them is
    equally likely, so a token that appears ``c`` times is the previous one
    with probability ``c / i``. The best guess is the most frequent token,
    right with probability ``max_count / i``. This function averages that
    over all sequences and positions ``i >= 1``: no order-blind model can
    expect to do better on this data.

    Args:
        token_ids: sequences of the "copy the previous token" task.
        vocab_size: token ids lie in ``[0, vocab_size)``.

    Shape:
        token_ids: ``(b, T)`` with ``T >= 2``

    Returns:
        The expected accuracy of the best order-blind guess, a float.

    Example:
        >>> order_blind_accuracy(torch.tensor([[0, 1, 1]]), vocab_size=2)
        0.75
    """
    check_positive(vocab_size=vocab_size)
    check_token_ids(token_ids, vocab_size, smallest=(1, 2))
    check_values("token_ids", token_ids, "order_blind_accuracy")
    # (b, T) -> (b, T, V): a 1 in column t_j of row j
    one_hot = nn.functional.one_hot(token_ids, vocab_size)
    # Counts of each token among positions 0 .. i - 1, for i = 1 .. T - 1
    counts = one_hot.cumsum(dim=1)[:, :-1]  # (b, T, V) -> (b, T - 1, V)
    prefix_len = torch.arange(1, token_ids.shape[1], device=token_ids.device)  # i
    best = counts.amax(dim=-1) / prefix_len  # (b, T - 1)
    return best.mean().item()

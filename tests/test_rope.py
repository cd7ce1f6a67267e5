"""Rotary position embeddings, from the formula to batched generation.

The formula and its two layouts, the relative property and what float32
angles cost, then a two-layer RoPE model in float64: a left-padded batch
equals each prompt alone (with and without the cache), a prefill in chunks
of every size equals one prefill, and a shift of every position changes no
logit. Last, the five mistakes of RoPE generation, each a one-line mutant of
a copy of the package's source, each caught by the test that names it.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from helpers import reference_rope

import attention
from attention import (
    KVCache,
    TinyAttentionModel,
    apply_rope,
    decode_step,
    generate_greedy,
    generate_greedy_cached,
    pad_sequences,
    rope_angles,
    rope_permutation,
)

PACKAGE = Path(attention.__file__).parent
VOCAB, D_MODEL, CONTEXT, HEADS = 13, 16, 40, 2
PROMPTS = [
    torch.tensor([3, 1, 4, 1, 5, 9, 2]),
    torch.tensor([6, 5, 3]),
    torch.tensor([5, 8, 9, 7, 9]),
]
NEW_TOKENS = 6
#: A difference that is a mistake, not rounding: float64 rounds at 1e-16 and
#: every right equality here holds to 1e-10; the untrained models' logits
#: are small (about 0.2), so a wrong position moves them by 1e-4 to 1e-2.
WRONG = 1e-6
LAYOUTS = ["half", "interleaved"]


def rope_model(pkg: ModuleType = attention, layout: str = "half", seed: int = 0):
    """A two-layer RoPE model in float64, its weights drawn from ``seed``."""
    torch.manual_seed(seed)
    model = pkg.TinyAttentionModel(
        VOCAB, D_MODEL, CONTEXT, HEADS, "rope", num_layers=2, rope_layout=layout
    )
    return model.double().eval()


# --- the formula ------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_rope_is_the_formula_in_float64(layout):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 16, generator=gen, dtype=torch.float64)  # (b, h, T, hd)
    for positions in (
        torch.arange(7) * 997,
        torch.randint(10**5, (2, 7), generator=gen),
    ):
        for base in (10000.0, 500000.0):
            got = apply_rope(x, positions, base=base, layout=layout)
            want = reference_rope(x, positions, base, layout)
            assert (got - want).abs().max().item() <= 1e-12


def test_the_layouts_are_one_rotation_under_a_fixed_permutation():
    gen = torch.Generator().manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(2, 4, 9, 32, generator=gen).to(dtype)
        positions = torch.randint(10**6, (2, 9), generator=gen)
        p = rope_permutation(32)
        interleaved = apply_rope(x, positions, layout="interleaved")[..., p]
        half = apply_rope(x[..., p], positions, layout="half")
        assert (interleaved - half).abs().max().item() == 0.0
        # and the layouts differ without it: mixing them is a real mistake
        assert not torch.allclose(apply_rope(x, positions), interleaved)


def test_a_score_depends_only_on_the_distance():
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 64, generator=gen, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        rq = apply_rope(q[None], torch.tensor([m]))
        rk = apply_rope(k[None], torch.tensor([n]))
        return (rq * rk).sum().item()

    for m, n in [(0, 0), (5, 2), (3, 40), (1000, 17)]:
        for shift in (1, 10, 10**3, 10**6):
            assert abs(score(m, n) - score(m + shift, n + shift)) <= 1e-9
    assert abs(score(5, 2) - score(5, 3)) > 1e-3  # a distance does change it


def test_careful_angles_keep_float32_close_where_naive_ones_drift():
    position = torch.tensor([10**6])
    careful = rope_angles(position, 64)
    naive = rope_angles(position, 64, dtype=torch.float32).double()
    assert (careful - naive).abs().max().item() > 1e-3  # a float32 product drifts
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(3))
    in_float32 = apply_rope(x, position)
    in_float64 = apply_rope(x.double(), position)
    assert (in_float32.double() - in_float64).abs().max().item() < 1e-6


def test_the_rotation_keeps_lengths_and_position_zero():
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    out = apply_rope(x, torch.arange(5) + 11)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), rtol=0, atol=1e-12)
    assert torch.equal(apply_rope(x, torch.zeros(5, dtype=torch.long)), x)


# --- the model --------------------------------------------------------------------


def generation_gaps(pkg: ModuleType, cached: bool, padded: bool) -> tuple[bool, float]:
    """Each prompt of a (left-padded) batch against the prompt alone without
    a cache: (all tokens equal, the largest logit difference)."""
    model = rope_model(pkg)
    generate = pkg.generate_greedy_cached if cached else pkg.generate_greedy
    same, gap = True, 0.0
    if padded:
        ids, mask = pkg.pad_sequences(PROMPTS, side="left")
        tokens, logits = generate(model, ids, NEW_TOKENS, mask)
    for row, prompt in enumerate(PROMPTS):
        alone_tokens, alone_logits = pkg.generate_greedy(
            model, prompt[None], NEW_TOKENS
        )
        if not padded:
            tokens, logits = generate(model, prompt[None], NEW_TOKENS)
            row = 0
        same = same and torch.equal(
            tokens[row, -alone_tokens.shape[1] :], alone_tokens[0]
        )
        gap = max(gap, (logits[row] - alone_logits[0]).abs().max().item())
    return same, gap


def chunked_prefill_gap(pkg: ModuleType) -> float:
    """The largest logit difference between a prefill in chunks of every
    size, 1 to the prompt's length, and one prefill."""
    model = rope_model(pkg)
    prompt = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]])
    one = pkg.decode_step(model, prompt, pkg.KVCache(CONTEXT, 2))
    gap = 0.0
    for size in range(1, prompt.shape[1] + 1):
        cache = pkg.KVCache(CONTEXT, 2)
        parts = [pkg.decode_step(model, part, cache) for part in prompt.split(size, 1)]
        gap = max(gap, (torch.cat(parts, dim=1) - one).abs().max().item())
    return gap


def layout_move_gap(pkg: ModuleType) -> float:
    """A checkpoint trained with one layout, moved and loaded into the other."""
    gap = 0.0
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    for source, target in [("interleaved", "half"), ("half", "interleaved")]:
        checkpoint = rope_model(pkg, source)
        loader = rope_model(pkg, target, seed=1)
        loader.load_state_dict(
            pkg.rope_layout_state_dict(
                checkpoint.state_dict(), HEADS, source=source, target=target
            )
        )
        gap = max(gap, (loader(ids) - checkpoint(ids)).abs().max().item())
    return gap


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_a_left_padded_batch_equals_each_prompt_alone(cached):
    same, gap = generation_gaps(attention, cached, padded=True)
    assert same and gap <= 1e-10, gap


def test_generation_with_the_cache_equals_without():
    same, gap = generation_gaps(attention, cached=True, padded=False)
    assert same and gap <= 1e-10, gap


def test_a_prefill_in_chunks_of_every_size_equals_one_prefill():
    assert chunked_prefill_gap(attention) <= 1e-10


@pytest.mark.parametrize("shift", [1, 37, 1000, 10**6])
def test_shifting_every_position_leaves_the_logits_unchanged(shift):
    model = rope_model()
    ids, mask = pad_sequences(PROMPTS, side="left")
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)  # (b, T): each row's own
    at_zero = decode_step(model, ids, KVCache(CONTEXT, 2), mask, position_ids=positions)
    shifted = decode_step(
        model, ids, KVCache(CONTEXT, 2), mask, position_ids=positions + shift
    )
    real = mask.bool()  # a pad's logits mean nothing
    assert (shifted - at_zero)[real].abs().max().item() <= 1e-10
    # one (T,) row of positions for the whole batch, shifted the same way
    one_row = torch.arange(ids.shape[1])
    plain = decode_step(model, ids, KVCache(CONTEXT, 2), position_ids=one_row)
    moved = decode_step(model, ids, KVCache(CONTEXT, 2), position_ids=one_row + shift)
    assert (moved - plain).abs().max().item() <= 1e-10


def test_the_forward_pass_equals_the_cached_one_and_has_no_table():
    model = rope_model()
    assert model.pos_emb is None
    assert not any("pos" in name for name, _ in model.named_parameters())
    ids = PROMPTS[0][None]
    full = model(ids)
    torch.testing.assert_close(
        decode_step(model, ids, KVCache(CONTEXT, 2)), full, rtol=0, atol=1e-12
    )


def test_the_cache_holds_each_key_rotated_once():
    torch.manual_seed(0)
    model = TinyAttentionModel(VOCAB, 8, CONTEXT, 2, "rope").double().eval()
    ids = PROMPTS[0][None]
    cache = KVCache(CONTEXT)
    decode_step(model, ids[:, :4], cache)
    decode_step(model, ids[:, 4:], cache)  # a second call: old keys stay as they were
    layer = model.attn
    # (1, T, d) -> (1, T, h, hd) -> (1, h, T, hd), turned at 0 .. T - 1 once
    raw = layer.W_key(model.embed(ids)).view(1, ids.shape[1], 2, 4).transpose(1, 2)
    want = apply_rope(raw, torch.arange(ids.shape[1]))
    torch.testing.assert_close(cache.keys[0], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("positions", ["learned", "rope", "none"])
def test_every_kind_of_positions_trains_and_generates(positions):
    torch.manual_seed(0)
    model = TinyAttentionModel(VOCAB, 8, CONTEXT, 2, positions, num_layers=2)
    ids, targets = attention.previous_token_data(32, 6, VOCAB, seed=0)
    losses = attention.train_model(model, ids, targets, steps=30, batch_size=16)
    assert losses[-1] < losses[0]
    model = model.double()
    ids, mask = pad_sequences(PROMPTS, side="left")
    plain = generate_greedy(model, ids, 4, mask)
    cached = generate_greedy_cached(model, ids, 4, mask)
    assert torch.equal(plain[0], cached[0])
    assert (plain[1] - cached[1]).abs().max().item() <= 1e-10
    for row, prompt in enumerate(PROMPTS):
        alone = generate_greedy(model, prompt[None], 4)
        assert torch.equal(plain[0][row, -alone[0].shape[1] :], alone[0][0])


def test_use_positions_is_the_old_spelling():
    torch.manual_seed(0)
    old = TinyAttentionModel(10, 8, 6, 2, use_positions=False)
    torch.manual_seed(0)
    new = TinyAttentionModel(10, 8, 6, 2, positions="none")
    assert old.positions == "none" and old.pos_emb is None
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(old(ids), new(ids))
    assert TinyAttentionModel(10, 8, 6, 2, use_positions=True).positions == "learned"


def test_a_learned_table_refuses_a_longer_sequence_and_rope_does_not():
    torch.manual_seed(0)
    learned = TinyAttentionModel(VOCAB, 8, 8, 2, "learned")
    rope = TinyAttentionModel(VOCAB, 8, 8, 2, "rope")
    ids = torch.zeros(1, 9, dtype=torch.long)
    with pytest.raises(ValueError, match="context_length is 8"):
        learned(ids)
    with pytest.raises(ValueError, match="pos_emb"):  # positions past the table
        decode_step(learned, ids[:, :2], KVCache(8), position_ids=torch.tensor([7, 8]))
    # a rotary model takes positions far past its context: only distances count
    far = decode_step(
        rope, ids[:, :2], KVCache(8), position_ids=torch.tensor([500, 501])
    )
    near = decode_step(rope, ids[:, :2], KVCache(8))
    torch.testing.assert_close(far, near, rtol=0, atol=1e-5)


def test_the_extrapolation_experiment_is_deterministic_and_rope_runs_past_training():
    table = attention.accuracy_by_length(train_length=4, multiples=(1, 2), steps=40)
    assert table == attention.accuracy_by_length(
        train_length=4, multiples=(1, 2), steps=40
    )
    assert table["learned"][2] is None
    assert table["rope"][2] is not None and table["none"][2] is not None


def test_the_page_can_show_two_mistakes_with_public_calls():
    """What the rotary page does: wrong positions passed on purpose at the
    prefill, and the cached keys turned a second time, each against the
    right answer."""
    model = rope_model()
    ids, mask = pad_sequences(PROMPTS, side="left")
    step_ids = torch.tensor([[4], [4], [4]])
    grown = torch.cat((mask, torch.ones(3, 1, dtype=mask.dtype)), dim=1)

    def next_logits(prefill_positions):
        cache = KVCache(CONTEXT, 2)
        decode_step(model, ids, cache, mask, position_ids=prefill_positions)
        return decode_step(model, step_ids, cache, grown)  # default positions

    right = next_logits(None)
    # mistake 1: the cache's positions 0 .. P - 1 for every row, pads counted
    wrong = next_logits(torch.arange(ids.shape[1]))
    padded_rows = ~mask.bool().all(dim=1)
    assert (wrong - right)[padded_rows].abs().max().item() > WRONG
    assert (wrong - right)[~padded_rows].abs().max().item() == 0.0

    cache = KVCache(CONTEXT, 2)
    prompt = PROMPTS[0][None]
    decode_step(model, prompt, cache)
    for layer in range(2):  # mistake 2: the cache's keys turned again
        cache.keys[layer] = apply_rope(cache.keys[layer], torch.arange(prompt.shape[1]))
    step = decode_step(model, torch.tensor([[4]]), cache)
    whole = model(torch.cat((prompt, torch.tensor([[4]])), dim=1))[:, -1:]
    assert (step - whole).abs().max().item() > WRONG


# --- the five mistakes, each a one-line mutant ------------------------------------

#: Each mistake: the file of the package, a piece of one line as it is (found
#: exactly once), and what the mutant has there instead.
MISTAKES = {
    "cache position as a left-padded row's position id": (
        "kv_cache.py",
        "new = attention_mask[:, start:].cumsum(dim=1)",
        "new = torch.ones_like(attention_mask[:, start:]).cumsum(dim=1)",
    ),
    "cached keys rotated a second time": (
        "kv_cache.py",
        "        keys, values = cache.append(layer, keys, values)",
        "        keys, values = cache.append(layer, keys, values); "
        "keys = rotate(keys, torch.arange(keys.shape[2]))",
    ),
    "offset counting the rows a cache kept": (
        "kv_cache.py",
        "    seen = attention_mask[:, :start].sum(dim=1, keepdim=True)",
        "    seen = start  # mutant: the rows the cache kept, pads included",
    ),
    "negative offset at prefill": (
        "kv_cache.py",
        "        return torch.arange(start, start + num_new, device=device)",
        "        return torch.arange(start - num_new, start, device=device)",
    ),
    "layouts mixed between a checkpoint and the loader": (
        "rope.py",
        "        order = rope_permutation(head_dim)  # interleaved -> half",
        "        order = torch.arange(head_dim)  # mutant: the checkpoint's layout",
    ),
}


@pytest.fixture
def mutant(tmp_path, request):
    """``mutant(mistake)``: a copy of the package with that one line changed,
    imported under a name of its own; removed from ``sys.modules`` after."""
    names: list[str] = []

    def load(mistake: str) -> ModuleType:
        file, line, mutated = MISTAKES[mistake]
        name = f"attention_mutant_{len(names)}_{abs(hash(request.node.name))}"
        copy = tmp_path / name
        shutil.copytree(
            PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "_data")
        )
        source = (copy / file).read_text()
        assert source.count(line) == 1, f"the line of {mistake!r} changed: {line!r}"
        (copy / file).write_text(source.replace(line, mutated))
        spec = importlib.util.spec_from_file_location(
            name, copy / "__init__.py", submodule_search_locations=[str(copy)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        names.append(name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in names:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


def test_mistake_1_cache_position_as_a_left_padded_rows_position_id(mutant):
    """The prefill counts a padded row's pads as positions (0 .. P - 1, the
    cache's positions); the steps after it count real tokens only."""
    pkg = mutant("cache position as a left-padded row's position id")
    assert generation_gaps(attention, cached=True, padded=True)[1] <= 1e-10
    same, gap = generation_gaps(pkg, cached=True, padded=True)
    assert gap > WRONG, f"mistake 1 not caught: {gap}"
    # Without a cache every call counts from 0 the same way: for RoPE that is
    # one shift of the whole row, which changes no score, so it hides there.
    assert generation_gaps(pkg, cached=False, padded=True)[1] <= 1e-10
    # A learned table has no such luck: the shifted rows read other vectors.
    torch.manual_seed(0)
    learned = pkg.TinyAttentionModel(VOCAB, D_MODEL, CONTEXT, HEADS, num_layers=2)
    ids, mask = pkg.pad_sequences(PROMPTS, side="left")
    batch = pkg.generate_greedy(learned.double().eval(), ids, 2, mask)[1]
    alone = pkg.generate_greedy(learned, PROMPTS[1][None], 2)[1]
    assert (batch[1] - alone[0]).abs().max().item() > WRONG


def test_mistake_2_cached_keys_rotated_a_second_time(mutant):
    pkg = mutant("cached keys rotated a second time")
    assert generation_gaps(pkg, cached=False, padded=False)[1] <= 1e-10
    same, gap = generation_gaps(pkg, cached=True, padded=False)
    assert gap > WRONG, f"mistake 2 not caught: {gap}"


def test_mistake_3_offset_counting_the_rows_a_cache_kept(mutant):
    pkg = mutant("offset counting the rows a cache kept")
    # without a cache there is no offset: the mistake hides there
    assert generation_gaps(pkg, cached=False, padded=True)[1] <= 1e-10
    same, gap = generation_gaps(pkg, cached=True, padded=True)
    assert gap > WRONG, f"mistake 3 not caught: {gap}"


def test_mistake_4_negative_offset_at_prefill(mutant):
    pkg = mutant("negative offset at prefill")
    # one prefill alone shifts every position by the same -P: unseen
    model = rope_model(pkg)
    prompt = PROMPTS[0][None]
    prefill = pkg.decode_step(model, prompt, pkg.KVCache(CONTEXT, 2))
    assert (prefill - rope_model()(prompt)).abs().max().item() <= 1e-10
    # the next step sits P positions from the prompt's last token
    same, gap = generation_gaps(pkg, cached=True, padded=False)
    assert gap > WRONG, f"mistake 4 not caught by generation: {gap}"
    assert chunked_prefill_gap(pkg) > WRONG, "mistake 4 not caught by chunks"


def test_mistake_5_layouts_mixed_between_a_checkpoint_and_the_loader(mutant):
    assert layout_move_gap(attention) <= 1e-12
    pkg = mutant("layouts mixed between a checkpoint and the loader")
    gap = layout_move_gap(pkg)
    assert gap > WRONG, f"mistake 5 not caught: {gap}"


def test_a_mutant_copy_is_a_package_of_its_own(mutant):
    """The mutants above are not vacuous: the copy runs the changed line."""
    pkg = mutant("negative offset at prefill")
    assert pkg.KVCache is not KVCache
    mask = None
    assert pkg.kv_cache.new_position_ids(mask, 0, 3, "cpu").tolist() == [-3, -2, -1]

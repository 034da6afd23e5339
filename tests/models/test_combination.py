"""Attention combination (multi-source-attention.txt §2-3) against the paper's equations computed by hand."""
import pytest
import torch

from nmtkit.models.attention import MLPAttention
from nmtkit.models.combination import SENTINEL, Sentinel, make_combination

H, A = 6, 5
SIZES = {"src": 4, "mt": 3}
LENGTHS = {"src": [3, 1], "mt": [2, 4]}


def memories(sizes=SIZES, lengths=LENGTHS):
    """Encoder states (zeros at padding) and masks of a batch of two, as a state getter."""
    g = torch.Generator().manual_seed(3)
    state = {}
    for name, size in sizes.items():
        n = lengths[name]
        mask = torch.arange(max(n)).unsqueeze(0) < torch.tensor(n).unsqueeze(1)
        state[f"memory.{name}"] = torch.randn(2, max(n), size, generator=g) * mask.unsqueeze(-1)
        state[f"mask.{name}"] = mask
    return state


def run(strategy, share=False, sentinel=False, sizes=SIZES, lengths=LENGTHS, balance=False, normalise=False):
    torch.manual_seed(0)
    comb = make_combination(strategy, H, sizes, A, share, H if sentinel else 0, balance, normalise)
    for p in comb.parameters():  # larger weights than the default, so that the distributions are far from uniform
        torch.nn.init.uniform_(p, -1, 1)
    state = memories(sizes, lengths)
    state.update(comb.start(state.__getitem__))
    s = torch.randn(2, H, generator=torch.Generator().manual_seed(4))
    psi = torch.rand(2, H, generator=torch.Generator().manual_seed(5)) * s if sentinel else None
    return comb, state, s, psi, comb(s, state.__getitem__, psi)


def energy(v, x):
    """v^T tanh(x), as the paper writes it (the code computes it through the sigmoid)."""
    return torch.tanh(x) @ v.weight[0]


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("sentinel", [False, True])
def test_flat_is_one_distribution_over_all_states_eq_6_7(share, sentinel):
    comb, state, s, psi, (context, per_encoder, over) = run("flat", share, sentinel)
    items = {n: (state[f"memory.{n}"], state[f"mask.{n}"]) for n in SIZES}
    if sentinel:
        items[SENTINEL] = (psi.unsqueeze(1), torch.ones(2, 1, dtype=torch.bool))
    values = comb.energy if share else comb.value
    for b in range(2):
        e = torch.cat([energy(comb.v, comb.energy[n](h[b][m[b]]) + comb.query(s[b])) for n, (h, m) in items.items()])
        alpha = torch.softmax(e, 0)  # Eq. 6: one softmax over every encoder's real states (and the sentinel)
        c = torch.cat([values[n](h[b][m[b]]) for n, (h, m) in items.items()]).T @ alpha  # Eq. 7
        assert torch.allclose(context[b], c, atol=1e-5)
        real = torch.cat([per_encoder[n][b][state[f"mask.{n}"][b]] for n in SIZES])
        assert torch.allclose(real, alpha[:len(real)], atol=1e-6)
        assert over[b].sum().item() == pytest.approx(1, abs=1e-6)  # jointly, with the sentinel if on
        sums = [per_encoder[n][b].sum() for n in SIZES] + ([alpha[-1]] if sentinel else [])
        assert torch.allclose(over[b], torch.stack(sums), atol=1e-6)
    for n in SIZES:
        assert (per_encoder[n][~state[f"mask.{n}"]] == 0).all()
    assert over.size(1) == len(SIZES) + sentinel


@pytest.mark.parametrize("sentinel", [False, True])
def test_balanced_flat_divides_each_encoders_weights_by_its_length(sentinel):
    lengths = {"src": [3, 1], "mt": [2, 4]}
    comb, state, s, psi, (context, per_encoder, over) = run("flat", sentinel=sentinel, balance=True)
    items = {n: (state[f"memory.{n}"], state[f"mask.{n}"]) for n in SIZES}
    if sentinel:
        items[SENTINEL] = (psi.unsqueeze(1), torch.ones(2, 1, dtype=torch.bool))
    for b in range(2):
        e = torch.cat([energy(comb.v, comb.energy[n](h[b][m[b]]) + comb.query(s[b])) for n, (h, m) in items.items()])
        counts = torch.cat([torch.full((lengths[n][b],), float(lengths[n][b])) for n in SIZES] +
                           ([torch.ones(1)] if sentinel else []))
        alpha = torch.exp(e) / counts
        alpha = alpha / alpha.sum()  # exp(e) / T_k, normalised jointly
        c = torch.cat([comb.value[n](h[b][m[b]]) for n, (h, m) in items.items()]).T @ alpha
        assert torch.allclose(context[b], c, atol=1e-5)
        real = torch.cat([per_encoder[n][b][state[f"mask.{n}"][b]] for n in SIZES])
        assert torch.allclose(real, alpha[:len(real)], atol=1e-6)
    plain = run("flat", sentinel=sentinel)[-1][2]
    assert not torch.allclose(over, plain, atol=1e-3)
    # equal energies: every encoder (and the sentinel) gets the same mass, whatever its length
    torch.nn.init.zeros_(comb.v.weight)
    _, _, over = comb(s, state.__getitem__, psi)
    assert torch.allclose(over, torch.full_like(over, 1 / over.size(1)), atol=1e-6)
    for strategy in ("concat", "hierarchical"):
        with pytest.raises(ValueError, match=f"--balance-encoders .* --combination {strategy} has none"):
            make_combination(strategy, H, SIZES, A, balance=True)


@pytest.mark.parametrize("sentinel", [False, True])
def test_hierarchical_can_normalise_each_encoders_context_before_eq_8_10(sentinel):
    comb, state, s, psi, (context, per_encoder, beta) = run("hierarchical", sentinel=sentinel, normalise=True)
    contexts = {}
    for n, attention in comb.attentions.items():  # Eq. 1-3 per encoder, then each context layer-normalised
        c, _ = attention(s, state[f"keys.{n}"], state[f"memory.{n}"], state[f"mask.{n}"])
        contexts[n] = torch.nn.functional.layer_norm(c, c.shape[-1:], comb.norms[n].weight, comb.norms[n].bias)
    if sentinel:
        contexts[SENTINEL] = psi  # the sentinel as it is
    want, want_beta = comb.combine(s, contexts)
    assert torch.allclose(context, want, atol=1e-6) and torch.allclose(beta, want_beta, atol=1e-6)
    plain = run("hierarchical", sentinel=sentinel)[-1]
    assert torch.equal(per_encoder["src"], plain[1]["src"]) and not torch.allclose(beta, plain[2], atol=1e-3)
    with pytest.raises(ValueError, match="--normalise-contexts .* --combination concat attends over each encoder apart"):
        make_combination("concat", H, SIZES, A, normalise=True)


@pytest.mark.parametrize("sentinel", [False, True])
def test_flat_can_normalise_each_encoders_states_before_eq_6_7(sentinel):
    comb, state, s, psi, (context, per_encoder, over) = run("flat", sentinel=sentinel, normalise=True)
    normalised = {n: torch.nn.functional.layer_norm(state[f"memory.{n}"], (size,), comb.norms[n].weight,
                                                    comb.norms[n].bias) for n, size in SIZES.items()}
    items = {n: (normalised[n], state[f"mask.{n}"]) for n in SIZES}
    if sentinel:
        items[SENTINEL] = (psi.unsqueeze(1), torch.ones(2, 1, dtype=torch.bool))  # the sentinel as it is
    for b in range(2):
        e = torch.cat([energy(comb.v, comb.energy[n](h[b][m[b]]) + comb.query(s[b])) for n, (h, m) in items.items()])
        alpha = torch.softmax(e, 0)
        c = torch.cat([comb.value[n](h[b][m[b]]) for n, (h, m) in items.items()]).T @ alpha  # Eq. 6-7 on them
        assert torch.allclose(context[b], c, atol=1e-5)
    # an encoder's scale no longer weighs: its states 10 times larger, the same attention
    state = memories()
    state["memory.mt"] = state["memory.mt"] * 10
    state.update(comb.start(state.__getitem__))
    scaled = comb(s, state.__getitem__, psi)
    assert torch.allclose(scaled[2], over, atol=1e-4) and torch.allclose(scaled[0], context, atol=1e-4)
    assert not torch.allclose(run("flat", sentinel=sentinel)[-1][2], over, atol=1e-3)


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("sentinel", [False, True])
def test_hierarchical_attends_over_per_encoder_contexts_eq_8_10(share, sentinel):
    comb, state, s, psi, (context, per_encoder, beta) = run("hierarchical", share, sentinel)
    values = comb.energy if share else comb.value
    contexts = {}
    for n in SIZES:
        att = comb.attentions[n]
        h, m = state[f"memory.{n}"], state[f"mask.{n}"]
        for b in range(2):  # Eq. 1-3 per encoder
            a = torch.softmax(energy(att.v, att.key(h[b][m[b]]) + att.query(s[b])), 0)
            assert torch.allclose(per_encoder[n][b][m[b]], a, atol=1e-6)
            assert per_encoder[n][b].sum().item() == pytest.approx(1, abs=1e-6)
        contexts[n] = torch.bmm(per_encoder[n].unsqueeze(1), h).squeeze(1)
    if sentinel:
        contexts[SENTINEL] = psi
    e = torch.stack([energy(comb.v, comb.energy[n](c) + comb.query(s)) for n, c in contexts.items()], 1)  # Eq. 8
    assert torch.allclose(beta, torch.softmax(e, 1), atol=1e-6)  # Eq. 9
    assert torch.allclose(beta.sum(1), torch.ones(2), atol=1e-6)
    expected = sum(beta[:, k:k + 1] * values[n](c) for k, (n, c) in enumerate(contexts.items()))  # Eq. 10
    assert torch.allclose(context, expected, atol=1e-5)


def test_concat_joins_independent_contexts():
    comb, state, s, _, (context, per_encoder, over) = run("concat")
    assert over is None and context.shape == (2, sum(SIZES.values()))
    parts = []
    for n in SIZES:
        c, w = comb.attentions[n](s, comb.attentions[n].keys(state[f"memory.{n}"]), state[f"memory.{n}"],
                                  state[f"mask.{n}"])
        assert torch.allclose(per_encoder[n], w) and torch.allclose(w.sum(1), torch.ones(2), atol=1e-6)
        parts.append(c)
    assert torch.allclose(context, torch.cat(parts, 1))


@pytest.mark.parametrize("strategy", ["flat", "hierarchical"])
def test_one_encoder_reduces_to_plain_attention(strategy):
    """With one encoder (no sentinel) both strategies are the attention of Eq. 1-3, the context projected by U_c."""
    sizes, lengths = {"src": 4}, {"src": [3, 1]}
    comb, state, s, _, (context, per_encoder, over) = run(strategy, sizes=sizes, lengths=lengths)
    plain = MLPAttention(H, 4, A)
    with torch.no_grad():
        parts = (comb.query, comb.energy["src"], comb.v) if strategy == "flat" else \
            (comb.attentions["src"].query, comb.attentions["src"].key, comb.attentions["src"].v)
        for mine, theirs in zip((plain.query, plain.key, plain.v), parts):
            mine.load_state_dict(theirs.state_dict())
    memory, mask = state["memory.src"], state["mask.src"]
    c, alpha = plain(s, plain.keys(memory), memory, mask)
    assert torch.allclose(per_encoder["src"], alpha, atol=1e-6)
    assert torch.allclose(context, comb.value["src"](c), atol=1e-5)
    assert torch.allclose(over, torch.ones(2, 1))


def test_sentinel_gate_eq_4():
    torch.manual_seed(0)
    gate = Sentinel(3, H)
    y, s_prev, s = torch.randn(2, 3), torch.randn(2, H), torch.randn(2, H)
    psi = torch.sigmoid(y @ gate.input.weight.T + gate.input.bias + s_prev @ gate.state.weight.T)
    assert torch.allclose(gate(y, s_prev, s), psi * s)


def test_table_1_switches_change_the_parameters():
    names = lambda comb: {n for n, _ in comb.named_parameters()}
    flat, shared = make_combination("flat", H, SIZES, A), make_combination("flat", H, SIZES, A, share=True)
    assert {n for n in names(flat) if n.startswith("value.")} and not {n for n in names(shared) if "value" in n}
    with_sentinel = make_combination("hierarchical", H, SIZES, A, sentinel_size=H)
    assert {"energy.sentinel.weight", "value.sentinel.weight"} <= names(with_sentinel)
    assert with_sentinel.labels == ("src", "mt", SENTINEL)
    with pytest.raises(ValueError, match="--combination concat has no shared projections and no sentinel"):
        make_combination("concat", H, SIZES, A, sentinel_size=H)

"""multi-source-transformer: teacher forcing equals step-by-step decoding, the strategies' maths, padding."""
import math

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta, StreamInfo
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.models.multi_source_transformer import MultiSourceDecoderLayer
from nmtkit.models.transformer import DecoderLayer
from nmtkit.train.diagnostics import group_pattern
from tests.models.decoding import assert_forward_equals_steps
from tests.models.test_multi_source import D_IMG, META, V_MT, V_SRC, batch

CONFIG = dict(arch="multi-source-transformer", d_model=16, ffn_size=32, heads=2, enc_layers=2, dec_layers=2,
              dropout=0.0, attention_dropout=0.0)
STRATEGIES = ("serial", "parallel", "flat", "hierarchical")
LAYER_ARGS = (16, 2, 32, 0.0, 0.0, 0.0, False)  # d_model, heads, ffn, dropouts, pre_norm


def model(meta=META, **over):
    torch.manual_seed(0)
    return build_model({**CONFIG, **over}, meta).eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_teacher_forced_forward_equals_step_by_step_decoding(strategy, norm):
    m, b = model(combination=strategy, norm=norm), batch()
    assert_forward_equals_steps(m, b)
    with torch.no_grad(), m.attention_weights(True):
        out = m(b)
    assert out.attention.keys() >= {"source", "source.mt", "source.image"}
    with torch.no_grad():  # without weights asked for (the fused kernels), the same logits
        assert torch.allclose(m(b).logits, out.logits, atol=1e-5)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_weights_sum_to_one_and_ignore_padding(strategy):
    m, b = model(combination=strategy), batch()
    with torch.no_grad(), m.attention_weights(True):
        att = m(b).attention
    names = {"src": "source", "mt": "source.mt", "image": "source.image"}
    for stream, name in names.items():
        w = att[name]
        assert (w[~b[stream].mask.unsqueeze(1).expand_as(w)] == 0).all()
    ones = lambda t: torch.allclose(t, torch.ones_like(t), atol=1e-5)
    if strategy == "flat":  # one distribution over every encoder's states
        assert ones(sum(att[n].sum(-1) for n in names.values()))
        assert torch.allclose(att["encoders"], torch.stack([att[n].sum(-1) for n in names.values()], -1))
    else:
        assert all(ones(att[n].sum(-1)) for n in names.values())
    if strategy in ("flat", "hierarchical"):
        assert ones(att["encoders"].sum(-1)) and m.attention_labels["encoders"] == ("src", "mt", "image")
    else:
        assert "encoders" not in att


def layers(strategy, names):
    torch.manual_seed(0)
    multi = MultiSourceDecoderLayer(names, strategy, *LAYER_ARGS).eval()
    plain = DecoderLayer(*LAYER_ARGS).eval()
    return multi, plain


def memories(names, lengths=(5, 3)):
    g = torch.Generator().manual_seed(2)
    h = {n: torch.randn(2, max(lengths), 16, generator=g) for n in names}
    mask = (torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1))[:, None, None, :]
    return h, tuple(mask for _ in names)


@pytest.mark.parametrize("strategy", ["serial", "parallel", "flat"])
def test_one_encoder_is_the_transformers_memory_attention(strategy):
    multi, plain = layers(strategy, ("src",))
    with torch.no_grad():
        for name in ("self_attention", "ffn", "sub"):
            getattr(plain, name).load_state_dict(getattr(multi, name).state_dict())
        att = multi.sources.joint if strategy == "flat" else multi.sources.attentions["src"]
        plain.memory_attention.q.load_state_dict(att.q.state_dict())
        plain.memory_attention.out.load_state_dict(att.out.state_dict())
        plain.memory_attention.kv.load_state_dict((multi.sources.kv["src"] if strategy == "flat" else att.kv).state_dict())
    h, masks = memories(("src",))
    y = torch.randn(2, 4, 16)
    with torch.no_grad():
        a, w, _ = multi(y, multi.keys_values(h), masks, weights=True)
        b, v, _ = plain(y, plain.keys_values(h["src"]), masks, weights=True)
    assert torch.allclose(a, b, atol=1e-6) and torch.allclose(w["source"], v, atol=1e-6)


def test_flat_is_one_softmax_per_head_over_all_encoders():
    multi, _ = layers("flat", ("src", "mt"))
    h, masks = memories(("src", "mt"))
    x = torch.randn(2, 3, 16)
    att = multi.sources
    with torch.no_grad():
        out, w = att.joint.attend_memory(x, att.keys_values(h), torch.cat(masks, -1), True)
        q = att.joint.q(x).view(2, 3, 2, 8).transpose(1, 2)  # [B, heads, T, 8]
        ks, vs = zip(*(att.kv[n](h[n]).chunk(2, -1) for n in ("src", "mt")))
        k, v = (torch.cat(t, 1).view(2, -1, 2, 8).transpose(1, 2) for t in (ks, vs))
        scores = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(~torch.cat(masks, -1), -torch.inf)
        p = torch.softmax(scores, -1)  # Eq. 6 per head: jointly over both encoders' real states
        expected = att.joint.out((p @ v).transpose(1, 2).reshape(2, 3, 16))
    assert torch.allclose(out, expected, atol=1e-5) and torch.allclose(w, p.mean(1), atol=1e-6)


def test_parallel_adds_the_encoders_attention():
    """Parallel: one residual sublayer whose output is the sum of each encoder's attention over its memory."""
    parallel, _ = layers("parallel", ("src", "mt"))
    h, masks = memories(("src", "mt"))
    y = torch.randn(2, 3, 16)
    with torch.no_grad():
        x, memory = parallel.sub.before(1, y), parallel.keys_values(h)
        each = [parallel.sources.attend(i, x, memory, masks, False, None)[0] for i in range(2)]
        got, _ = parallel.cross(y, memory, masks, False, None)
    assert torch.allclose(got, parallel.sub.after(1, y, each[0] + each[1]), atol=1e-6)


def test_serial_attends_in_turn_and_hierarchical_weighs_the_encoders():
    serial, _ = layers("serial", ("src", "mt"))
    assert len(serial.sub.norms) == 4  # self-attention, one per encoder, feed-forward
    h, masks = memories(("src", "mt"))
    y = torch.randn(2, 3, 16)
    with torch.no_grad():
        base, _, _ = serial(y, serial.keys_values(h), masks)
        other, _, _ = serial(y, serial.keys_values({**h, "mt": h["mt"] + 1}), masks)
    assert not torch.allclose(base, other)
    hier, _ = layers("hierarchical", ("src", "mt"))
    with torch.no_grad():
        x = hier.sub.before(1, y)
        contexts = {n: hier.sources.attend(i, x, hier.keys_values(h), masks, False, None)[0]
                    for i, n in enumerate(("src", "mt"))}
        comb = hier.sources.combination
        e = torch.stack([torch.tanh(comb.energy[n](c) + comb.query(x)) @ comb.v.weight[0] for n, c in contexts.items()], -1)
        beta = torch.softmax(e, -1)  # Eq. 8-9
        expected = sum(beta[..., k:k + 1] * comb.value[n](c) for k, (n, c) in enumerate(contexts.items()))  # Eq. 10
        got, w = hier.cross(y, hier.keys_values(h), masks, True, None)
    assert torch.allclose(got, hier.sub.after(1, y, expected), atol=1e-5) and torch.allclose(w["encoders"], beta, atol=1e-6)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_normalised_contexts_decode_step_by_step_and_weigh_encoders_apart_from_their_scale(norm):
    assert_forward_equals_steps(model(combination="hierarchical", normalise_contexts=True, norm=norm), batch())
    h, masks = memories(("src", "mt"))
    y = torch.randn(2, 3, 16)
    betas = {}
    for normalise in (False, True):
        torch.manual_seed(0)
        layer = MultiSourceDecoderLayer(("src", "mt"), "hierarchical", *LAYER_ARGS, normalise=normalise).eval()
        with torch.no_grad():
            before = layer.cross(y, layer.keys_values(h), masks, True, None)[1]["encoders"]
            out = layer.sources.attentions["mt"].out
            out.weight.mul_(10)
            out.bias.mul_(10)  # the mt encoder's context ten times as large
            after = layer.cross(y, layer.keys_values(h), masks, True, None)[1]["encoders"]
        betas[normalise] = (before, after)
    assert not torch.allclose(*betas[False], atol=1e-3)  # unnormalised, scale moves the weights
    torch.testing.assert_close(*betas[True], atol=1e-4, rtol=0)
    with pytest.raises(NmtkitError, match="--normalise-contexts normalises hierarchical"):
        model(combination="flat", normalise_contexts=True)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_padding_and_gradients(strategy, norm):
    m, b = model(combination=strategy, norm=norm), batch()
    alone = make_batch({"src": [b["src"].data[1, :2].tolist()], "mt": [b["mt"].data[1, :6].tolist()],
                        "image": [b["image"].data[1].numpy()]}, [b.tgt_out[1, :5].tolist()])
    with torch.no_grad():
        assert torch.allclose(m(b).logits[1, :6], m(alone).logits[0], atol=1e-5)
    m.train()
    m(b).logits.sum().backward()
    assert [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum()] == []


def test_encoders_and_refusals():
    assert model(encoders="mt,src").inputs == ("mt", "src")
    with pytest.raises(NmtkitError, match="the first of --encoders must be a text input"):
        model(encoders="image,src")
    text = CorpusMeta({"src": StreamInfo("tokens", 40), "tgt": StreamInfo("tokens", 30)})
    one = model(meta=text)
    assert one.inputs == ("src",) and len(one.decoder.layers[0].sub.norms) == 3


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_diagnostics_name_every_parameter_and_measure_each_encoder(strategy):
    m, b = model(combination=strategy, dec_layers=2), batch()
    groups = {name: group_pattern(paths) for name, paths in m.gradient_groups().items()}
    for name, _ in m.named_parameters():  # every parameter in exactly one group
        assert sum(bool(p.fullmatch(name)) for p in groups.values()) == 1, name
    with torch.no_grad():
        assert m.diagnostics(b, m(b)) == {}  # no weights computed: nothing to measure
        with m.attention_weights(True):
            out = m(b)
        stats = m.diagnostics(b, out)
        memories, _ = m.memory(b)  # dropout 0: the states the pass attended to
    real = b.tgt_out != 0
    for k, name in enumerate(("src", "mt", "image")):
        w = out.attention["source" if k == 0 else f"source.{name}"]  # the last layer's, mean over heads
        by_hand = torch.stack([(w[i, t, :, None] * memories[name][i]).sum(0).norm()
                               for i, t in real.nonzero().tolist()]).mean()
        assert abs(stats[f"context.{name}"] - float(by_hand)) < 1e-4
        mask = b[name].mask if name != "image" else torch.ones(memories[name].shape[:2], dtype=torch.bool)
        assert abs(stats[f"states.{name}"] - float(memories[name][mask].norm(dim=-1).mean())) < 1e-4
    if strategy in ("flat", "hierarchical"):
        assert abs(sum(stats[f"mass.{n}"] for n in ("src", "mt", "image")) - 1) < 1e-5
        by_hand = out.attention["encoders"][..., 1][real].mean()
        assert abs(stats["mass.mt"] - float(by_hand)) < 1e-5
    else:
        assert not any(key.startswith("mass.") for key in stats)


def _inputs(seed: int, lengths=((5, 2, 7), (3, 6, 1), (4, 4, 4))) -> dict:
    """The three inputs of :func:`batch`'s sentences, drawn anew: ``seed`` picks the content, not the lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = lambda v, ns: [torch.randint(4, v, (n,), generator=g).tolist() for n in ns]
    return {"src": ids(V_SRC, lengths[0]), "mt": ids(V_MT, lengths[1]),
            "image": [torch.rand(n, D_IMG, generator=g).numpy() for n in lengths[2]]}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_encoder_dropout_hides_one_encoder_per_sentence_in_training_only(strategy):
    m, names = model(combination=strategy, encoder_dropout=1.0), ("src", "mt", "image")
    targets = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    one, other = _inputs(1), _inputs(2)
    b = make_batch(one, targets)
    with torch.no_grad():
        assert torch.equal(m(b).logits, model(combination=strategy)(b).logits)  # evaluation: every encoder
        m.train()  # (every dropout 0: training differs by the hidden encoders alone)
        torch.manual_seed(3)
        present = torch.stack([mask[:, 0, 0].any(-1) for mask in m.memory(b)[1]], 1)  # [B, K]
        assert (present.sum(1) == len(names) - 1).all()  # p = 1: each sentence hides exactly one
        torch.manual_seed(3)  # (the same draw)
        with m.attention_weights(True):
            out = m(b)
        # what a sentence hides does not matter to it: the same logits with other content there
        mixed = {s: [one[s][i] if present[i, k] else other[s][i] for i in range(b.size)] for k, s in enumerate(names)}
        torch.manual_seed(3)
        assert torch.allclose(m(make_batch(mixed, targets)).logits, out.logits, atol=1e-5)
        assert not torch.allclose(m(make_batch(other, targets)).logits, out.logits, atol=1e-3)
    assert torch.isfinite(out.logits).all()
    for k, s in enumerate(names):  # no weight on a hidden encoder's states, nor on the encoder (flat, hierarchical)
        assert (out.attention["source" if k == 0 else f"source.{s}"][~present[:, k]] == 0).all()
        if strategy in ("flat", "hierarchical"):
            assert (out.attention["encoders"][~present[:, k]][..., k] == 0).all()
            assert (out.attention["encoders"][present[:, k]][..., k] > 0).all()

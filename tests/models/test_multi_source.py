"""multi-source: teacher forcing equals step-by-step decoding for every configuration, padding, causality."""
import numpy as np
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta, StreamInfo
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from tests.conftest import forward
from tests.models.decoding import assert_forward_equals_steps

V_SRC, V_MT, D_IMG, V_TGT = 40, 35, 12, 30
META = CorpusMeta({"src": StreamInfo("tokens", V_SRC), "mt": StreamInfo("tokens", V_MT),
                   "image": StreamInfo("features", D_IMG), "tgt": StreamInfo("tokens", V_TGT)})
CONFIG = dict(arch="multi-source", emb_size=16, enc_size=8, dec_size=24, att_size=10, dropout=0.0)
# Table 1's configurations (concat has neither switch), each with both decoder cells
CONFIGS = [dict(combination="concat")] + [dict(combination=c, share_projections=share, sentinel=sentinel)
                                          for c in ("flat", "hierarchical") for share in (False, True)
                                          for sentinel in (False, True)]
BALANCED = dict(combination="flat", balance_encoders=True, sentinel=True)
NORMALISED = dict(combination="hierarchical", normalise_contexts=True, sentinel=True)
FLAT_NORMALISED = dict(combination="flat", normalise_contexts=True, sentinel=True)


def model(meta=META, **over):
    torch.manual_seed(0)
    return build_model({**CONFIG, **over}, meta).eval()


def batch(lengths=((5, 2, 7), (3, 6, 1), (4, 4, 4), (4, 6, 1))):
    g = torch.Generator().manual_seed(1)
    ids = lambda v, ns: [torch.randint(4, v, (n,), generator=g).tolist() for n in ns]
    image = [torch.rand(n, D_IMG, generator=g).numpy() for n in lengths[2]]
    return make_batch({"src": ids(V_SRC, lengths[0]), "mt": ids(V_MT, lengths[1]), "image": image},
                      ids(V_TGT, lengths[3]))


@pytest.mark.parametrize("cell", ["gru", "cgru"])
@pytest.mark.parametrize("config", CONFIGS + [BALANCED, NORMALISED, FLAT_NORMALISED], ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_teacher_forced_forward_equals_step_by_step_decoding(config, cell):
    assert_forward_equals_steps(model(decoder_cell=cell, **config), batch())


@pytest.mark.parametrize("config", CONFIGS[:2] + CONFIGS[-1:])
def test_attention_names_sums_and_padding(config):
    m, b = model(**config), batch()
    with torch.no_grad():
        _, att = forward(m, b)
    names = {"src": "source", "mt": "source.mt", "image": "source.image"}
    joint = config["combination"] == "flat"
    for stream, name in names.items():
        w = att[name]  # [B, T, S_k]
        assert (w[~b[stream].mask.unsqueeze(1).expand_as(w)] == 0).all()
        if not joint:  # concat and hierarchical: a distribution per encoder
            assert torch.allclose(w.sum(-1), torch.ones(w.shape[:2]), atol=1e-6)
    if config["combination"] == "concat":
        assert "encoders" not in att and not m.attention_labels
    else:
        labels = m.attention_labels["encoders"]
        assert labels == ("src", "mt", "image") + (("sentinel",) if config["sentinel"] else ())
        assert torch.allclose(att["encoders"].sum(-1), torch.ones(att["encoders"].shape[:2]), atol=1e-6)
    if joint:  # flat: the encoders' states and the sentinel share one distribution
        total = sum(att[n].sum(-1) for n in names.values()) + (att["encoders"][..., -1] if config["sentinel"] else 0)
        assert torch.allclose(total, torch.ones_like(total), atol=1e-6)


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[2], CONFIGS[-1], BALANCED, NORMALISED, FLAT_NORMALISED])
def test_padding_in_a_batch_does_not_change_a_sentence(config):
    m, b = model(**config), batch()
    alone = make_batch({"src": [b["src"].data[1, :2].tolist()], "mt": [b["mt"].data[1, :6].tolist()],
                        "image": [b["image"].data[1].numpy()]}, [b.tgt_out[1, :5].tolist()])
    with torch.no_grad():
        logits, att = forward(m, b)
        l1, a1 = forward(m, alone)
    assert torch.allclose(logits[1, :6], l1[0], atol=1e-5)
    assert torch.allclose(att["source.mt"][1, :6, :7], a1["source.mt"][0], atol=1e-6)


def test_causal_outputs_do_not_see_later_targets():
    m, b = model(combination="flat", sentinel=True), batch()
    changed = b.tgt_in.clone()
    changed[:, 3:] = 5
    with torch.no_grad():
        l1, _ = forward(m, b)
        l2, _ = forward(m, b.with_target(changed))
    assert torch.equal(l1[:, :3], l2[:, :3])
    assert not torch.allclose(l1[:, 4], l2[:, 4])


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[-1]])
def test_every_input_and_parameter_matters(config):
    m, b = model(**config, param_init=0.3), batch()
    m(b).logits.sum().backward()
    unused = [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum()]
    assert not unused
    for stream in ("src", "mt", "image"):  # each encoder changes the output
        other = make_batch({**{k: [s.data[i, :int(s.lengths[i]) - (k != "image")].tolist() if k != "image"
                                   else s.data[i].numpy() for i in range(3)] for k, s in b.inputs.items()},
                            stream: ([[7] * 3] * 3 if stream != "image" else [np.ones((4, D_IMG), np.float32)] * 3)},
                           b.tgt_out.tolist())
        with torch.no_grad():
            assert not torch.allclose(m(b).logits[:, :1], m(other.with_target(b.tgt_in, b.tgt_out)).logits[:, :1])


def test_encoders_option_and_refusals():
    text_only = model(encoders="src")
    assert text_only.inputs == ("src",) and set(text_only.encoders) == {"src"}
    assert model(encoders="mt, src").inputs == ("mt", "src")
    b = batch()
    assert text_only.max_output_len(b, 1.0, 2).tolist() == [7, 4, 9]  # a·|src| + b, |src| counting </s>
    assert model(encoders="image,mt").max_output_len(b, 1.0, 2).tolist() == [5, 8, 3]  # the first text input
    for bad in ("src,src", "pe", "tgt"):
        with pytest.raises(NmtkitError, match="--encoders .*name each input stream once, from: src"):
            model(encoders=bad)
    with pytest.raises(NmtkitError, match="--arch multi-source: --combination concat has no shared projections"):
        model(combination="concat", sentinel=True)
    with pytest.raises(NmtkitError, match="needs a text input"):
        model(encoders="image")


@pytest.mark.parametrize("encoders, sentinel, used", [
    ("src,image", False, {"feature_norm", "bounded_features", "encoder_dropout", "balance_encoders"}),
    ("src,mt", False, {"encoder_dropout", "balance_encoders"}),
    ("image,src", False, {"feature_norm", "bounded_features", "encoder_dropout", "balance_encoders"}),
    ("src", True, {"balance_encoders"}),  # (flat's offset -log T_1 weighs the states against the sentinel)
    ("mt", False, set()),
])
def test_options_read_with_some_encoders_alone(encoders, sentinel, used):
    """``train`` refuses these options where they are not read (tests/cli/test_train.py)."""
    from nmtkit.models.registry import get_spec
    from nmtkit.train.options import TRAIN_OPTIONS

    spec = get_spec("multi-source")
    config = {**{o.name: o.default for o in TRAIN_OPTIONS + spec.options}, "encoders": encoders, "sentinel": sentinel}
    assert {name for name, reads, _ in spec.uses(config, META) if reads} == used


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_diagnostics_name_every_parameter_and_measure_each_encoder(config):
    m, b = model(**config), batch()
    paths = m.gradient_groups().values()
    for name, _ in m.named_parameters():  # every parameter in some group
        assert any(name.startswith(path + ".") for path in paths), name
    with torch.no_grad():
        out = m(b)
        stats = m.diagnostics(b, out)
        state = m.encode(b)
    real = b.tgt_out != 0
    for k, name in enumerate(("src", "mt", "image")):
        w = out.attention["source" if k == 0 else f"source.{name}"]
        by_hand = torch.stack([(w[i, t, :, None] * state[f"memory.{name}"][i]).sum(0).norm()
                               for i, t in real.nonzero().tolist()]).mean()
        assert abs(stats[f"context.{name}"] - float(by_hand)) < 1e-5
        memory, mask = state[f"memory.{name}"], state[f"mask.{name}"]
        assert abs(stats[f"states.{name}"] - float(memory[mask].norm(dim=-1).mean())) < 1e-5
    if config["combination"] == "concat":
        assert not any(key.startswith("mass.") for key in stats)
    else:
        masses = [stats[f"mass.{label}"] for label in m.attention_labels["encoders"]]
        assert abs(sum(masses) - 1) < 1e-5


def test_bounded_features_keep_the_image_states_within_those_of_a_gru():
    loose, bounded = model(param_init=2.0), model(param_init=2.0, bounded_features=True)
    with torch.no_grad():
        wide, narrow = loose.encode(batch())["memory.image"], bounded.encode(batch())["memory.image"]
    assert wide.abs().max() > 1 and narrow.abs().max() <= 1  # tanh of a large state rounds to 1 in float32
    assert torch.allclose(narrow, torch.tanh(wide))  # the same projection, through tanh


def test_layer_norms_start_as_the_identity_map():
    m = model(**NORMALISED, param_init=0.5)
    norms = [mod for mod in m.modules() if isinstance(mod, torch.nn.LayerNorm)]
    assert len(norms) == 4  # the image's features, and each of the three encoders' contexts
    assert all(torch.equal(n.weight, torch.ones_like(n.weight)) and not n.bias.any() for n in norms)


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[2], CONFIGS[5], NORMALISED, FLAT_NORMALISED], ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_encoder_dropout_hides_one_encoder_per_sentence_in_training_only(config):
    m, b = model(encoder_dropout=1.0, **config), batch()
    names = {"src": "source", "mt": "source.mt", "image": "source.image"}
    with torch.no_grad():
        evaluated = forward(m, b)[0]  # evaluation: every encoder, as without the option
        assert torch.equal(evaluated, forward(model(**config), b)[0])
        m.train()
        torch.manual_seed(3)
        out = m(b)
        torch.manual_seed(3)
        present = m.encode(b)["present"]  # (the same draw as the pass's)
    assert (present.sum(1) == len(names) - 1).all()  # p = 1: each sentence hides exactly one
    assert torch.isfinite(out.logits).all()
    hidden = {stream: ~present[:, k] for k, stream in enumerate(names)}
    if config["combination"] == "flat":  # no weight on a hidden encoder's states
        for stream, name in names.items():
            assert (out.attention[name][hidden[stream]] == 0).all()
    if config["combination"] != "concat":  # nor on the encoder itself
        for k, stream in enumerate(names):
            assert (out.attention["encoders"][hidden[stream]][..., k] == 0).all()
            assert (out.attention["encoders"][~hidden[stream]][..., k] > 0).all()


def test_encoder_dropout_zeroes_a_hidden_encoders_context_and_summary():
    m = model(encoder_dropout=1.0, **CONFIGS[0]).train()  # concat
    b = batch()
    torch.manual_seed(5)
    state = m.encode(b)
    present = state["present"]
    means = m.decoder.summary(state).split([8 * 2] * 3, -1)  # each encoder's mean state (2 × enc_size)
    for k in range(3):
        assert (means[k][~present[:, k]] == 0).all() and (means[k][present[:, k]] != 0).any()
    s = torch.randn(b.size, 24)
    context, _, _ = m.decoder.combination(s, lambda name: state[name], None, present)
    for k, part in enumerate(context.split([16] * 3, -1)):
        assert (part[~present[:, k]] == 0).all()

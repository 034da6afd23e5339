"""The contract every registered architecture keeps, taken from the registry (a new architecture is covered by
registering it): teacher-forced forward equals step-by-step decoding, ``reorder`` moves every state, a sentence's
output does not depend on its batch (teacher-forced, and searched greedily or by beam), a checkpoint round trip gives
the same model, a target prefix starts every output, and sentences joining a running beam search (continuous
batching) are decoded as alone where the model's states merge."""
import pytest
import torch

from nmtkit.checkpoint import save_checkpoint
from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import WordVocab
from nmtkit.errors import NmtkitError
from nmtkit.inference import load_model
from nmtkit.models import build_model
from nmtkit.models.registry import get_spec, model_names
from nmtkit.search.beam import BeamSearch, beam_search
from nmtkit.search.greedy import greedy_search
from nmtkit.search.prefix import PREFIX, Prefixed
from tests.models import test_multi_source as inputs
from tests.models.decoding import assert_forward_equals_steps, step_by_step

# weights large enough (param_init) that a state left behind by a reorder changes the outputs beyond the tolerance
SMALL = dict(emb_size=8, enc_size=8, dec_size=16, att_size=0, readout_size=0, d_model=16, ffn_size=32, heads=2,
             enc_layers=1, dec_layers=1, layers=1, dropout=0.0, attention_dropout=0.0, param_init=0.5)
# inputs of unequal lengths in one batch (src, mt, image grid), and targets of unequal lengths
LENGTHS = ((5, 2, 7, 3), (3, 6, 1, 4), (4, 4, 4, 4), (4, 6, 1, 3))


def config(arch: str, **over) -> dict:
    """A tiny configuration of ``arch``: its own options among SMALL's, and ``over``'s."""
    names = {o.name for o in get_spec(arch).options}
    return {"arch": arch, **{k: v for k, v in {**SMALL, **over}.items() if k in names}}


def tiny(arch: str, meta: CorpusMeta = inputs.META, **over) -> torch.nn.Module:
    """A tiny ``arch`` in eval mode, reading every input it can of the test corpus (``meta``): a source text, an MT
    output, an image."""
    torch.manual_seed(0)
    return build_model(config(arch, **over), meta).eval()


#: what :func:`tiny_or_ensemble` makes an ensemble of: two Transformers of different sizes
TWO_TRANSFORMERS = "ensemble of two transformers"


def tiny_or_ensemble(arch: str, **over):
    """:func:`tiny`'s ``arch``, or for :data:`TWO_TRANSFORMERS` an ensemble of two tiny Transformers (d_model 16 and
    8), weighted alike."""
    if arch != TWO_TRANSFORMERS:
        return tiny(arch, **over)
    from nmtkit.search.ensemble import Ensemble

    return Ensemble([tiny("transformer"), tiny("transformer", d_model=8)], [0.5, 0.5], [{"src": "src"}] * 2)


def batch():
    """Four examples with padding in every stream (each model reads the streams it was built for)."""
    return inputs.batch(LENGTHS)


def renamed(b, names):
    """Batch ``b`` with its streams renamed (``names``: old -> new)."""
    b.inputs = {names.get(k, k): v for k, v in b.inputs.items()}
    return b


def unbatched(b, i):
    """Example ``i``'s inputs of batch ``b`` as make_batch takes them, ``{stream: [item]}``: features as they are,
    tokens without the end symbol, which make_batch adds."""
    return {name: [s.data[i, :int(s.lengths[i])].numpy()] if not s.is_tokens
            else [s.data[i, :int(s.lengths[i]) - 1].tolist()] for name, s in b.inputs.items()}


def rows_of(b, rows):
    """Examples ``rows`` of batch ``b``, in that order, as a batch of their own (without padding for one)."""
    parts = [unbatched(b, i) for i in rows]
    targets = [b.tgt_out[i, :int((b.tgt_out[i] != 0).sum()) - 1].tolist() for i in rows]  # (without </s>)
    return make_batch({name: [p[name][0] for p in parts] for name in b.inputs}, targets)


def alone(b, i):
    """Example ``i`` of batch ``b`` as a batch of its own, without padding."""
    return rows_of(b, [i])


ARCHS = model_names()


def combinations() -> list[tuple[str, dict]]:
    """Every architecture at its defaults, and at each other way it has of combining its encoders' attention (which
    lays out the memory a decoding state holds)."""
    found: list[tuple[str, dict]] = []
    for arch in ARCHS:
        found.append((arch, {}))
        found += [(arch, {"combination": c}) for o in get_spec(arch).options if o.name == "combination"
                  for c in o.choices or () if c != o.default]
    return found


COMBINATIONS = combinations()


@pytest.mark.parametrize("arch", ARCHS)
def test_teacher_forced_forward_equals_step_by_step_decoding(arch):
    assert_forward_equals_steps(tiny(arch), batch(), label=arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_reorder_moves_every_state(arch):
    m, b = tiny(arch), batch()
    index = torch.tensor([2, 0, 0, 3])  # rows swapped, one repeated, one dropped: as beam search reorders
    with torch.no_grad():
        want, _ = step_by_step(m, b)
        got, _ = step_by_step(m, b, reorder_at=1, index=index)
    real = b.tgt_out.index_select(0, index) != 0
    real[:, :2] = False  # the steps before the reorder
    assert real.any()
    torch.testing.assert_close(got[real], want.index_select(0, index)[real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_sentence_does_not_depend_on_its_batch(arch):
    m, b = tiny(arch), batch()
    with torch.no_grad():
        logits = m(b).logits
        for i in range(b.tgt_out.size(0)):
            one = alone(b, i)
            n = one.tgt_out.size(1)
            torch.testing.assert_close(m(one).logits[0], logits[i, :n], atol=1e-5, rtol=0, msg=f"{arch}: row {i}")


@pytest.mark.parametrize("arch", ARCHS)
def test_every_dropout_is_off_in_eval_mode(arch):
    """Each of the architecture's dropout options at 0.5 changes nothing once the model is in eval mode: the same
    weights give the same outputs, teacher-forced and step by step, as without dropout."""
    rates = {o.name: 0.5 for o in get_spec(arch).options if o.name.endswith("dropout")}
    m, b = tiny(arch), batch()
    dropping = tiny(arch, **rates)
    dropping.load_state_dict(m.state_dict())
    with torch.no_grad():
        assert torch.equal(dropping(b).logits, m(b).logits)
        assert torch.equal(step_by_step(dropping, b)[0], step_by_step(m, b)[0])


@pytest.mark.parametrize("arch", ARCHS)
def test_padding_embeddings_are_zero_after_the_uniform_initialisation(arch):
    m = tiny(arch, param_init=0.1)
    padded = [e for e in m.modules() if isinstance(e, torch.nn.Embedding) and e.padding_idx is not None]
    assert padded and all(not e.weight[e.padding_idx].any() and e.weight.any() for e in padded)


def test_attention_weights_are_wanted_only_within_the_block():
    m = tiny(ARCHS[0])
    before = m.weights_wanted
    with m.attention_weights(not before):
        assert m.weights_wanted is (not before)
        with m.attention_weights(before):
            assert m.weights_wanted is before
        assert m.weights_wanted is (not before)
    assert m.weights_wanted is before


@pytest.mark.parametrize("arch", ARCHS)
def test_a_checkpoint_round_trip_gives_the_same_model(arch, tmp_path):
    m, b = tiny(arch), batch()
    sizes = {name: info.size for name, info in inputs.META.streams.items() if info.kind == "tokens"}
    vocabs = {name: WordVocab([f"w{k}" for k in range(size - 4)]).state() for name, size in sizes.items()}
    save_checkpoint(tmp_path / "model.pt", {"config": config(arch), "model": m.state_dict(),
                                            "corpus": inputs.META.state(), "vocab": vocabs})
    loaded = load_model(tmp_path / "model.pt")
    assert type(loaded.model) is type(m) and loaded.model.inputs == m.inputs
    with torch.no_grad():
        assert torch.equal(loaded.model(b).logits, m(b).logits)
        assert torch.equal(step_by_step(loaded.model, b)[0], step_by_step(m, b)[0])


@pytest.mark.parametrize("arch", ARCHS)
def test_a_model_reads_its_streams_by_the_names_the_corpus_gives_or_refuses_the_corpus(arch):
    names = {"src": "en", "mt": "fr"}  # preprocess --src en=en --src fr
    meta = CorpusMeta({names.get(k, k): v for k, v in inputs.META.streams.items()})
    try:
        m = tiny(arch, meta)
    except NmtkitError as e:  # a single-source architecture reads the stream src: one line saying so
        assert "reads a tokens stream named 'src'" in str(e)
        return
    assert "src" not in m.inputs
    b = renamed(batch(), names)
    with torch.no_grad():
        out = m(b)
        lp, _ = step_by_step(m, b)
        found = greedy_search(m, b, 1.5, 3)
    real = b.tgt_out != 0
    torch.testing.assert_close(torch.log_softmax(out.logits, -1)[real], lp[real], atol=1e-5, rtol=0)
    assert len(found) == b.tgt_out.size(0)


def searched(m, b, beam: int):
    """Every hypothesis of each sentence of ``b``: beam search keeping all ``beam``, or greedy search for 1 (outputs
    at most 6 tokens)."""
    with torch.no_grad():
        if beam == 1:
            return greedy_search(m, b, 0.0, 6)
        return beam_search(m, b, beam, n_best=beam, max_len_a=0.0, max_len_b=6)


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("arch", ARCHS)
def test_a_sentence_is_decoded_alike_alone_and_in_any_batch(arch, beam):
    m, b = tiny(arch), batch()
    together = searched(m, b, beam)
    reordered = searched(m, rows_of(b, [3, 1, 0, 2]), beam)
    for i in range(b.size):
        for other in (searched(m, alone(b, i), beam)[0], reordered[[3, 1, 0, 2].index(i)]):
            assert [h.tokens for h in other] == [h.tokens for h in together[i]], f"{arch}: row {i}"
            assert [h.score for h in other] == pytest.approx([h.score for h in together[i]], abs=1e-4)


@pytest.mark.parametrize("arch,over", COMBINATIONS)
def test_sentences_added_to_a_running_search_are_decoded_as_alone_or_refused(arch, over):
    """Continuous batching: sentences joining a beam search steps after others (longer and shorter inputs, so that
    both source and target positions are padded) get the hypotheses they get alone; a model whose states do not
    merge refuses them."""
    m, b = tiny(arch, **over), batch()
    search = BeamSearch(m, 3, n_best=3, max_len_a=0.0, max_len_b=6)
    search.add(rows_of(b, [2]), [2])
    if not m.merges_states:
        with pytest.raises(ValueError, match="do not merge"):
            search.add(rows_of(b, [0]), [0])
        return
    found = {}
    for joining in ([0, 3], [], [1], []):  # (a step after each)
        if joining:
            search.add(rows_of(b, joining), joining)
        found.update(search.step())
    while search.size:
        found.update(search.step())
    assert sorted(found) == [0, 1, 2, 3]
    for i in range(b.size):
        own = searched(m, alone(b, i), 3)[0]
        assert [h.tokens for h in found[i]] == [h.tokens for h in own], f"{arch}: row {i}"
        assert [h.score for h in found[i]] == pytest.approx([h.score for h in own], abs=1e-4)


def test_every_model_merges_states_but_those_attending_over_all_encoders_positions_as_one_memory():
    """The flat combination's one memory of every encoder's positions in turn would be padded at its end, not after
    each encoder's, so its states do not merge; every other model's do (the Transformers' caches included)."""
    refused = [(arch, over) for arch, over in COMBINATIONS if not tiny(arch, **over).merges_states]
    assert refused == [("multi-source", {"combination": "flat"}), ("multi-source-transformer", {"combination": "flat"})]


@pytest.mark.parametrize("arch", ARCHS)
def test_a_target_prefix_starts_every_output_and_is_scored_by_the_model(arch):
    m, b = tiny(arch), batch()
    prefixes = [[5, 6, 7], [], [8], [9, 5, 9, 5, 9, 5, 9, 5]]  # none; one longer than the length limit (6)
    limits = m.max_output_len(b, 0.0, 6).tolist()
    b.inputs[PREFIX] = make_batch({PREFIX: prefixes})[PREFIX]
    found = searched(Prefixed(m), b, 3)
    del b.inputs[PREFIX]
    free = searched(m, b, 3)
    for i, prefix in enumerate(prefixes):  # every one of the n-best, after a prefix past the limit too
        assert all(h.tokens[:len(prefix)] == prefix for h in found[i]) and len(found[i]) == 3, f"{arch}: row {i}"
        assert all(len(h.tokens) <= max(limits[i], len(prefix) + 6) for h in found[i])  # (the limit's b, 6, after it)
        best = found[i][0]  # its log-probability is the model's, prefix included
        one = make_batch(unbatched(b, i), [best.tokens])
        lp, _ = step_by_step(m, one)
        gold = one.tgt_out[0]
        assert lp[0, torch.arange(gold.numel()), gold].sum().item() == pytest.approx(best.logprob, abs=1e-4)
    assert [h.tokens for h in found[1]] == [h.tokens for h in free[1]]


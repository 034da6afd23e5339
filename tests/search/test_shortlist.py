"""Lexical shortlists: a shortlist of the whole vocabulary changes nothing; a short one yields only its words, scored
by the softmax over them; the table's best translations and the first ids make each batch's list."""
import copy
import random

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import EOS, WordVocab
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.search import beam_search, greedy_search
from nmtkit.search.compiled import Compiled
from nmtkit.search.ensemble import Ensemble
from nmtkit.search.precision import PackedLinear, for_inference, packable
from nmtkit.search.shortlist import Shortlist, Shortlisted, ShortlistedLinear
from nmtkit.search.translator import SearchOptions, search_batch
from nmtkit.tools.lexicon import load_translations
from tests.conftest import TINY_CONFIG
from tests.models.test_transformer import TINY as TINY_TRANSFORMER

V_SRC, V_TGT = 30, 40
CONFIGS = {"rnnsearch": TINY_CONFIG, "transformer": {**TINY_TRANSFORMER, "tie_embeddings": True},
           "luong": dict(arch="luong", emb_size=16, dec_size=24, layers=1, dropout=0.0, param_init=0.3),
           "bitatt-rnn": {**TINY_CONFIG, "arch": "bitatt-rnn"},
           # other layers with as many outputs as the target vocabulary: d_model = |V|; maxout of 2 x |V|/2
           "transformer-wide": {**TINY_TRANSFORMER, "d_model": V_TGT},
           "rnnsearch-wide": {**TINY_CONFIG, "readout_size": V_TGT // 2}}
OUTPUT = {"rnnsearch": "decoder.readout.output", "bitatt-rnn": "decoder.readout.output", "luong": "output",
          "transformer": "output"}


def model(arch="rnnsearch", seed=0):
    torch.manual_seed(seed)
    config = CONFIGS[arch]
    config = {**config, "param_init": 0.6} if config["arch"] in ("rnnsearch", "bitatt-rnn") else config
    return build_model(config, CorpusMeta.text(V_SRC, V_TGT)).eval()


def sources(n=9, seed=3):
    g = random.Random(seed)
    return [[g.randrange(4, V_SRC) for _ in range(g.randrange(1, 9))] for _ in range(n)]


def table(best=3, seed=0):
    """Each source word's ``best`` candidate target ids, at random (none for the special tokens)."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(V_TGT - 4, generator=g)[:best] + 4 if i >= 4 else torch.full((best,), EOS)
                        for i in range(V_SRC)])


def decode(m, src, beam=4):
    return search_batch(m, make_batch(src), SearchOptions(beam_size=beam, n_best=beam, max_len_b=3),
                        torch.device("cpu"))


@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_a_shortlist_of_the_whole_vocabulary_changes_nothing(arch):
    m, src = model(arch), sources()
    whole = Shortlisted(copy.deepcopy(m), Shortlist(table(), torch.arange(V_TGT)), V_TGT)
    for beam in (1, 4):
        for a, b in zip(decode(m, src, beam), decode(whole, src, beam), strict=True):
            assert [h.tokens for h in a] == [h.tokens for h in b]
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def restricted_logprob(m, src, tokens, ids):
    """log p(tokens </s> | src) by teacher forcing, the softmax over the target ids ``ids`` only."""
    batch = make_batch([src], [tokens])
    with torch.no_grad():
        lp = torch.log_softmax(m.score_logits(batch)[0][:, ids].float(), -1)
    position = {int(t): i for i, t in enumerate(ids)}
    return float(sum(lp[j, position[int(t)]] for j, t in enumerate(batch.tgt_out[0])))


@pytest.mark.parametrize("arch", ["rnnsearch", "transformer", "rnnsearch-wide", "transformer-wide"])
def test_a_short_list_yields_its_words_scored_by_the_softmax_over_them(arch):
    m, src = model(arch, seed=1), sources(7, seed=4)
    shortlist = Shortlist(table(best=2), torch.arange(6))
    short = Shortlisted(copy.deepcopy(m), shortlist, V_TGT)
    ids = shortlist.ids(make_batch(src)["src"].data)
    assert ids.tolist() == sorted({0, 1, 2, 3, 4, 5} | set(table(best=2)[sorted({i for s in src for i in s})]
                                                            .flatten().tolist()))
    assert len(ids) < V_TGT - 10
    words = set(ids.tolist())
    for s, n_best in zip(src, decode(short, src), strict=True):
        assert len(n_best) == 4
        for h in n_best:
            assert set(h.tokens) <= words
            assert h.logprob == pytest.approx(restricted_logprob(m, s, h.tokens, ids), abs=1e-4)


@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_the_output_layer_alone_is_restricted(arch):
    m = model(arch)
    short = Shortlisted(m, Shortlist(table(), torch.arange(6)), V_TGT)
    wrapped = [name for name, layer in short.model.named_modules() if isinstance(layer, ShortlistedLinear)]
    assert wrapped == [OUTPUT[CONFIGS[arch]["arch"]]]


def test_each_model_of_an_ensemble_has_its_output_layer_restricted():
    members = [model("transformer-wide"), model("rnnsearch-wide")]
    ensemble = Ensemble(members, [0.5, 0.5], [{"src": "src"}] * 2)
    short = Shortlisted(ensemble, Shortlist(table(), torch.arange(6)), V_TGT)
    assert [name for name, layer in short.model.named_modules() if isinstance(layer, ShortlistedLinear)] == \
        ["members.0.output", "members.1.decoder.readout.output"]
    assert decode(short, sources())[0]


@pytest.mark.skipif(not packable(), reason="this PyTorch has no oneDNN packed linear kernels")
def test_a_shortlisted_model_packed_for_cpus_decodes_the_same(monkeypatch):
    monkeypatch.setattr(PackedLinear, "FROM_ROWS", ((0, 2),))  # (a tiny model's layers would not be packed)
    m, src = model("rnnsearch", seed=2), sources(8)
    shortlist = Shortlist(table(best=3), torch.arange(8))
    plain = Shortlisted(copy.deepcopy(m), shortlist, V_TGT)
    packed, _ = for_inference(Shortlisted(copy.deepcopy(m), shortlist, V_TGT), "fp32", torch.device("cpu"))
    for a, b in zip(decode(plain, src), decode(packed, src), strict=True):
        assert [h.tokens for h in a] == [h.tokens for h in b]
    assert isinstance(packed.model.decoder.readout.output.packed, PackedLinear)


@pytest.mark.skipif(not packable(), reason="this PyTorch has no oneDNN packed linear kernels")
def test_a_shortlist_s_copy_of_a_packed_output_layer_is_packed_only_if_large_enough(monkeypatch):
    monkeypatch.setattr(PackedLinear, "FROM_ROWS", ((600, 2),))  # (the output layer has 640 weights, its copy 576)
    m, src = model("rnnsearch", seed=2), sources(8)
    packed, _ = for_inference(Shortlisted(m, Shortlist(table(best=3), torch.arange(8)), V_TGT), "fp32",
                              torch.device("cpu"))
    decode(packed, src)
    output = packed.model.decoder.readout.output
    assert isinstance(output.layer, PackedLinear) and output.weight.numel() < 600 and output.packed is None


@pytest.mark.skipif(not packable(), reason="this PyTorch has no oneDNN packed linear kernels")
def test_a_compiled_shortlisted_step_multiplies_by_each_batch_s_packed_copy_and_decodes_the_same(graphs):
    made, backend = graphs
    src, shortlist = sources(8), Shortlist(table(best=3), torch.arange(8))
    plain = Shortlisted(model("rnnsearch", seed=2), shortlist, V_TGT)
    packed, _ = for_inference(Shortlisted(model("rnnsearch", seed=2), shortlist, V_TGT), "fp32", torch.device("cpu"),
                              compiled=True)  # (every layer packed, the shortlist's copy too)
    compiled = Compiled(packed, backend)
    for batch in (src[:3], src):  # (two shortlists: copies of two sizes)
        for a, b in zip(decode(plain, batch), decode(compiled, batch), strict=True):
            assert [h.tokens for h in a] == [h.tokens for h in b]
    assert packed.model.decoder.readout.output.packed.every
    assert made and any("nmtkit.packed_linear" in graph.code for graph in made)


def test_the_search_itself_sees_positions_and_encode_the_whole_vocabulary():
    """Greedy search on the shortlisted model gives positions in the list; search_batch maps them back."""
    m, src = model("rnnsearch", seed=1), sources(5)
    shortlist = Shortlist(table(best=2), torch.arange(6))
    short = Shortlisted(copy.deepcopy(m), shortlist, V_TGT)
    positions = greedy_search(short, make_batch(src), max_len_b=3)
    mapped = decode(short, src, beam=1)
    ids = shortlist.ids(make_batch(src)["src"].data).tolist()
    for p, h in zip(positions, mapped):
        assert [ids[i] for i in p[0].tokens] == h[0].tokens
    assert not any(layer.active for layer in short.layers)  # restricted only while decoding a step
    assert beam_search(short, make_batch(src), 3)[0]


def test_encoding_sees_the_whole_vocabulary():
    """bitatt-rnn's greedy reverse pass (in encode) picks words from the whole vocabulary, shortlist or not."""
    m, batch = model("bitatt-rnn", seed=1), make_batch(sources(5))
    short = Shortlisted(copy.deepcopy(m), Shortlist(table(best=1), torch.arange(4)), V_TGT)
    with torch.no_grad():
        full, restricted = m.encode(batch), short.encode(batch)
    for name, t in full.tensors.items():
        torch.testing.assert_close(restricted[name], t)


def test_padding_adds_only_the_end_of_sentence():
    shortlist = Shortlist(torch.tensor([[EOS, EOS]] * 5 + [[7, 9]]), torch.arange(4))
    assert shortlist.ids(torch.tensor([[5, 0, 0]])).tolist() == [0, 1, 2, 3, 7, 9]


def test_a_table_file_gives_each_source_words_best_translations(tmp_path):
    (tmp_path / "lex").write_text("haus house 0.7\nhaus home 0.2\nhaus building 0.1\nrot red 0.9\n"
                                  "blau blue 0.8\nhaus hut 0.05\n")
    src, tgt = WordVocab(["haus", "rot", "grün"]), WordVocab(["the", "house", "home", "building", "hut", "red"])
    shortlist = Shortlist.from_translations(load_translations(tmp_path / "lex", 2), src, tgt, first=1, best=2)
    assert shortlist.always.tolist() == [0, 1, 2, 3, 4]  # the specials and "the"
    assert shortlist.table[4].tolist() == [5, 6] and shortlist.table[5].tolist() == [9, EOS]
    assert shortlist.table[6].tolist() == [EOS, EOS]  # grün: no entry; blau: not a source word of the model
    for table in ("x y 1\n", "haus maison 1\nrot rouge 1\n"):  # (no source word of the model; none of its targets)
        (tmp_path / "other").write_text(table)
        with pytest.raises(NmtkitError, match="no entry pairs a source word of the model with a target word"):
            Shortlist.from_translations(load_translations(tmp_path / "other", 2), src, tgt)


def test_a_model_without_the_text_input_is_refused():
    with pytest.raises(NmtkitError, match="reads no text input 'mt'"):
        Shortlisted(model(), Shortlist(table(), torch.arange(4)), V_TGT, stream="mt")

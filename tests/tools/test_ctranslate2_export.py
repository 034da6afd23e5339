"""Export to CTranslate2: the exported float32 model's greedy translations equal nmtkit's, for post- and
pre-norm, sinusoidal and learned positions; its token log-probabilities equal nmtkit's for a model whose every
parameter (layer normalisations included) is random; other architectures are refused in one line."""
import pytest
import torch

from nmtkit.data.vocab import WordVocab
from nmtkit.inference import load_model
from nmtkit.search.translator import SearchOptions, translate_ids
from nmtkit.tools.ctranslate2_export import export_ctranslate2
from tests.conftest import run
from tests.models import test_transformer as tiny

ctranslate2 = pytest.importorskip("ctranslate2", reason="the optional extra nmtkit[ctranslate2] is not installed "
                                                        "('make test' installs it)")

TINY = ["--arch", "transformer", "--d-model", 32, "--ffn-size", 64, "--heads", 4, "--enc-layers", 2,
        "--dec-layers", 2, "--batch-size", 32, "--lr", 0.003, "--valid-max-sentences", 4]


@pytest.mark.parametrize("variant", [[], ["--norm", "pre", "--positions", "learned", "--max-positions", 64]],
                         ids=["post-sinusoidal", "pre-learned"])
def test_the_exported_model_translates_as_nmtkit_does(corpus_dir, text_dir, tmp_path, variant):
    save = tmp_path / "run"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY, *variant, "--max-steps", 60, "--valid-every", 60])
    run(["export", "-m", save / "last.pt", "-o", tmp_path / "ct2"])
    (tmp_path / "plain").mkdir()
    assert (tmp_path / "ct2").stat().st_mode == (tmp_path / "plain").stat().st_mode  # not a private temporary folder
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    loaded = load_model(save / "last.pt", torch.device("cpu"))
    src, tgt = loaded.text_vocab("src"), loaded.tgt_vocab
    lines = (text_dir / "test.en").read_text().splitlines()[:20]
    ids = [src.encode(line) for line in lines]
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu")
    for limit in (40, 3):  # (as docs/export.md says to call it: the same length limit, empty outputs allowed)
        opts = SearchOptions(beam_size=1, max_len_a=0, max_len_b=limit)
        ours = [hyps[0].tokens for hyps in translate_ids(loaded.model, ids, opts, torch.device("cpu"))]
        results = translator.translate_batch([src.id_to_token(x) for x in ids], beam_size=1, min_decoding_length=0,
                                             max_decoding_length=limit)
        theirs = [tgt.encode(" ".join(r.hypotheses[0])) for r in results]
        assert theirs == ours and any(ours) and any(len(o) == limit for o in ours) == (limit == 3)
    run(["export", "-m", save / "last.pt", "-o", tmp_path / "ct2", "--quantization", "int8", "--force"])
    int8 = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu").translate_batch([src.id_to_token(ids[0])])
    assert int8[0].hypotheses[0]
    r = run(["export", "-m", save / "last.pt", "-o", tmp_path / "ct2"], ok=False)
    assert r.exit_code == 2 and "already holds a CTranslate2 model folder; use --force" in r.stderr


def randomise(model: torch.nn.Module, seed: int = 0) -> None:
    """Every parameter random: layer normalisations' gains around one and their biases far from zero, so that a
    gain or bias exported wrongly (left out, swapped, another layer's) changes the scores."""
    g = torch.Generator().manual_seed(seed)
    norms = {id(p) for m in model.modules() if isinstance(m, torch.nn.LayerNorm) for p in m.parameters()}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if id(p) in norms and name.endswith("weight"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * (0.5 if id(p) in norms or p.dim() == 1 else 0.3))


@pytest.mark.parametrize("over", [{}, {"norm": "pre"}, {"norm": "pre", "positions": "learned", "max_positions": 32,
                                                         "tie_embeddings": False}],
                         ids=["post-norm", "pre-norm", "pre-learned-untied"])
def test_the_exported_model_scores_tokens_as_nmtkit_does(tmp_path, over):
    """CTranslate2's log-probability of each reference token (``score_batch``) is nmtkit's teacher-forced one."""
    model, batch = tiny.model(**over), tiny.batch()
    randomise(model)
    src = WordVocab([f"s{i}" for i in range(4, tiny.V_SRC)])
    tgt = WordVocab([f"t{i}" for i in range(4, tiny.V_TGT)])
    assert (len(src), len(tgt)) == (tiny.V_SRC, tiny.V_TGT)
    export_ctranslate2(model, src, tgt, {**tiny.TINY, **over}, tmp_path / "ct2")
    with torch.no_grad():
        lp = torch.log_softmax(model(batch).logits, -1).gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)
    lengths = (batch.tgt_out != 0).sum(1).tolist()
    ours = [lp[i, :n].tolist() for i, n in enumerate(lengths)]  # each target token and </s>
    sources = [src.id_to_token(row[:n - 1].tolist()) for row, n in zip(batch["src"].data, batch["src"].lengths)]
    targets = [tgt.id_to_token(row[:n - 1].tolist()) for row, n in zip(batch.tgt_out, lengths)]
    scored = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu").score_batch(sources, targets)
    theirs = [r.log_probs for r in scored]
    assert [len(x) for x in theirs] == lengths
    for a, b in zip(theirs, ours):
        assert a == pytest.approx(b, abs=1e-4)


def test_called_as_docs_say_ctranslate2_never_writes_what_nmtkit_never_writes(tmp_path):
    """A random model whose likeliest words include <s>: CTranslate2 wrote it (and <pad>), nmtkit's searches never
    do; with suppress_sequences, as docs/export.md calls it, the greedy outputs are nmtkit's."""
    model = tiny.model()
    randomise(model, seed=3)
    src = WordVocab([f"s{i}" for i in range(4, tiny.V_SRC)])
    tgt = WordVocab([f"t{i}" for i in range(4, tiny.V_TGT)])
    export_ctranslate2(model, src, tgt, tiny.TINY, tmp_path / "ct2")
    ids = [[4 + (3 * k + j) % (tiny.V_SRC - 4) for j in range(2 + k % 4)] for k in range(12)]
    ours = [h[0].tokens for h in translate_ids(model.eval(), ids, SearchOptions(beam_size=1, max_len_a=0,
                                                                                  max_len_b=6), torch.device("cpu"))]
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu")
    results = translator.translate_batch([src.id_to_token(x) for x in ids], beam_size=1, min_decoding_length=0,
                                         max_decoding_length=6, suppress_sequences=[["<s>"], ["<pad>"]])
    assert [tgt.encode(" ".join(r.hypotheses[0])) for r in results] == ours


def test_architectures_ctranslate2_cannot_express_are_refused(trained_ckpt, tmp_path):
    r = run(["export", "-m", trained_ckpt, "-o", tmp_path / "ct2"], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --format ctranslate2: CTranslate2 has no equivalent of --arch "
                                             "rnnsearch; only transformer models are exported\n")
    assert not (tmp_path / "ct2").exists()

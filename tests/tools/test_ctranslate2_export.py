"""Export to CTranslate2: the exported float32 model's greedy translations equal nmtkit's, for post- and
pre-norm, sinusoidal and learned positions; other architectures are refused in one line."""
import pytest
import torch

from nmtkit.inference import load_model
from nmtkit.search.translator import SearchOptions, translate_ids
from tests.conftest import run

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
    opts = SearchOptions(beam_size=1, max_len_a=0, max_len_b=40)
    ours = [hyps[0].tokens for hyps in translate_ids(loaded.model, ids, opts, torch.device("cpu"))]
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu")
    results = translator.translate_batch([src.id_to_token(x) for x in ids], beam_size=1, max_decoding_length=41)
    theirs = [tgt.encode(" ".join(r.hypotheses[0])) for r in results]
    assert theirs == ours and any(ours)
    run(["export", "-m", save / "last.pt", "-o", tmp_path / "ct2", "--quantization", "int8", "--force"])
    int8 = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu").translate_batch([src.id_to_token(ids[0])])
    assert int8[0].hypotheses[0]
    r = run(["export", "-m", save / "last.pt", "-o", tmp_path / "ct2"], ok=False)
    assert r.exit_code == 2 and "already exists; use --force" in r.stderr


def test_architectures_ctranslate2_cannot_express_are_refused(trained_ckpt, tmp_path):
    r = run(["export", "-m", trained_ckpt, "-o", tmp_path / "ct2"], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --format ctranslate2: CTranslate2 has no equivalent of --arch "
                                             "rnnsearch; only transformer models are exported\n")
    assert not (tmp_path / "ct2").exists()

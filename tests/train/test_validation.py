"""Early stopping, and validation of a model on a corpus."""
from nmtkit.train.validation import EarlyStopping


def test_early_stopping_counts_validations_without_a_new_best():
    s = EarlyStopping("bleu", patience=2)
    assert [s.update(v) for v in (10.0, 12.0, 11.0, 12.0, 13.0)] == [
        (True, False), (True, False), (False, False), (False, True), (True, False)]
    never = EarlyStopping("ppl", patience=0)
    assert [never.update(v) for v in (5.0, 6.0, 6.0, 7.0)] == [(True, False)] + [(False, False)] * 3


def test_validation_scores_the_translations_against_their_own_references(tmp_path, monkeypatch):
    """BLEU of validate() equals BLEU of the same sentences translated one by one: hypotheses stay aligned with
    references through length-sorted batches, and an empty source line is translated, not a crash."""
    import torch

    from nmtkit.data.numbers import write_demo_corpus
    from nmtkit.data.preprocess import VocabSpec, preprocess
    from nmtkit.data.shards import Corpus
    from nmtkit.data.text import read_lines
    from nmtkit.metrics.text import corpus_score
    from nmtkit.models import build_model
    from nmtkit.search.translator import SearchOptions, translate_ids
    from nmtkit.train import validation
    from nmtkit.train.validation import validate

    text = write_demo_corpus(tmp_path / "t", train=100, valid=12, test=2)
    lines = (text / "valid.en").read_text().splitlines()
    (text / "valid.en").write_text("\n".join([lines[0], ""] + lines[2:]) + "\n")
    corpus = Corpus.open(preprocess(tmp_path / "c", "en", "de", text / "train", text / "valid",
                                    vocab=VocabSpec("word", 200)))
    torch.manual_seed(0)
    model = build_model({"arch": "rnnsearch", "emb_size": 8, "enc_size": 8, "dec_size": 8, "param_init": 0.5},
                        corpus.meta)
    config = {"valid_max_sentences": 0, "valid_beam": 2, "valid_batch_size": 5, "max_len_a": 1.5, "max_len_b": 3}
    scored = []
    monkeypatch.setattr(validation, "corpus_score", lambda m, hyps, refs: scored.append((hyps, refs)) or
                        corpus_score(m, hyps, refs))
    result = validate(model, corpus, config, torch.device("cpu"))
    src = corpus.vocabs["src"]
    alone = [translate_ids(model, [src.encode(line)], SearchOptions(beam_size=2, max_len_b=3), "cpu")[0][0]
             for line in read_lines(text / "valid.en")]
    texts = [corpus.tgt_vocab.decode(h.tokens) for h in alone]
    assert scored[0] == (texts, [read_lines(text / "valid.de")]) and len(set(texts)) > 3
    assert result["ppl"] > 1 and model.training

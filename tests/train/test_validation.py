"""Early stopping, and validation of a model on a corpus."""
import pytest

from nmtkit.train.validation import EarlyStopping


def test_early_stopping_counts_validations_without_a_new_best():
    s = EarlyStopping("bleu", patience=2)
    assert [s.update(v) for v in (10.0, 12.0, 11.0, 12.0, 13.0)] == [
        (True, False), (True, False), (False, False), (False, True), (True, False)]
    never = EarlyStopping("ppl", patience=0)
    assert [never.update(v) for v in (5.0, 6.0, 6.0, 7.0)] == [(True, False)] + [(False, False)] * 3


@pytest.mark.parametrize("tokenize", ["13a", "char"])
def test_validation_scores_the_translations_against_their_own_references(tmp_path, monkeypatch, tokenize):
    """BLEU of validate() equals BLEU of the same sentences translated one by one: hypotheses stay aligned with
    references through length-sorted batches, and an empty source line is translated, not a crash; BLEU tokenized
    as --valid-tokenize says."""
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
    config = {"valid_max_sentences": 0, "valid_beam": 2, "valid_batch_size": 5, "max_len_a": 1.5, "max_len_b": 3,
              "valid_tokenize": tokenize}
    scored = []
    monkeypatch.setattr(validation, "corpus_score", lambda m, hyps, refs, tokenize: scored.append((hyps, refs)) or
                        corpus_score(m, hyps, refs, tokenize=tokenize))
    result = validate(model, corpus, config, torch.device("cpu"))
    src = corpus.vocabs["src"]
    alone = [translate_ids(model, [src.encode(line)], SearchOptions(beam_size=2, max_len_b=3), "cpu")[0][0]
             for line in read_lines(text / "valid.en")]
    texts = [corpus.tgt_vocab.decode(h.tokens) for h in alone]
    assert scored[0] == (texts, [read_lines(text / "valid.de")]) and len(set(texts)) > 3
    assert result["ppl"] > 1 and model.training
    refs = [read_lines(text / "valid.de")]
    for metric in ("bleu", "chrf", "chrf++"):  # each of the same texts
        assert result[metric] == round(corpus_score(metric, texts, refs, tokenize=tokenize).score, 3)
    assert corpus_score("bleu", texts, refs, tokenize="char").score != corpus_score("bleu", texts, refs).score


def test_validation_of_an_ape_model_scores_the_post_edited_text(tmp_path, monkeypatch):
    """On a corpus of edit operations, the hypotheses are applied to the raw MT input before BLEU: a model whose
    hypotheses are the gold operations scores 100 against the post-edits."""
    import torch

    from nmtkit.data.preprocess import VocabSpec, preprocess
    from nmtkit.data.shards import Corpus, Shard
    from nmtkit.metrics.text import corpus_score
    from nmtkit.models import build_model
    from nmtkit.search.hypothesis import Hypothesis
    from nmtkit.train import validation
    from nmtkit.train.validation import validate

    mt = ["the house is small and old", "he go to the school every day", "a b c d e f", "it is raining today"]
    pe = ["the house is very small and old", "he goes to school every day", "a b c d e f", "today it rains"]
    for split in ("train", "valid"):
        for ext, lines in (("src", ["x y z"] * 4), ("mt", mt), ("pe", pe)):
            (tmp_path / f"{split}.{ext}").write_text("".join(line + "\n" for line in lines))
    corpus = Corpus.open(preprocess(tmp_path / "c", ["src", "mt"], "pe", tmp_path / "train", tmp_path / "valid",
                                    vocab=VocabSpec("word", 100), ape_edits="mt"))
    shard = Shard(corpus.shard_paths("valid")[0])
    gold = [[Hypothesis(shard.get("tgt", i).tolist(), 0.0, 0.0)] for i in range(len(shard))]
    monkeypatch.setattr(validation, "search_sorted", lambda model, lengths, *args: gold[:len(lengths)])
    scored = []
    monkeypatch.setattr(validation, "corpus_score", lambda m, hyps, refs, tokenize: scored.append((hyps, refs)) or
                        corpus_score(m, hyps, refs, tokenize=tokenize))
    model = build_model({"arch": "rnnsearch", "emb_size": 8, "enc_size": 8, "dec_size": 8}, corpus.meta)
    config = {"valid_max_sentences": 3, "valid_beam": 1, "valid_batch_size": 2, "max_len_a": 1.5, "max_len_b": 3,
              "valid_tokenize": "13a"}
    result = validate(model, corpus, config, torch.device("cpu"))
    assert scored[0] == (pe[:3], [pe[:3]]) and result["bleu"] == 100.0


def test_a_pair_too_long_to_validate_is_left_out_of_the_perplexity_and_translated_from_its_first_tokens(
        tmp_path, monkeypatch):
    """(a validation pair of 30,000 words was scored and translated whole: 40 GB asked at the first validation)"""
    import torch

    from nmtkit.data.batching import examples_batch
    from nmtkit.data.numbers import write_demo_corpus
    from nmtkit.data.preprocess import VocabSpec, preprocess
    from nmtkit.data.shards import Corpus, Shard
    from nmtkit.data.text import read_lines
    from nmtkit.metrics.perplexity import corpus_nll, perplexity
    from nmtkit.metrics.text import corpus_score
    from nmtkit.models import build_model
    from nmtkit.search.translator import SearchOptions, translate_ids
    from nmtkit.train import validation
    from nmtkit.train.validation import too_long_to_validate, validate

    text = write_demo_corpus(tmp_path / "t", train=100, valid=6, test=2)
    long_en = " ".join(read_lines(text / "valid.en") * 3)
    with open(text / "valid.en", "a") as en, open(text / "valid.de", "a") as de:
        en.write(long_en + "\n")
        de.write("eins\n")
    corpus = Corpus.open(preprocess(tmp_path / "c", "en", "de", text / "train", text / "valid",
                                    vocab=VocabSpec("word", 200)))
    limit = max(len(line.split()) for side in ("en", "de") for line in read_lines(text / f"valid.{side}")[:6])
    assert len(long_en.split()) > limit
    monkeypatch.setattr(validation, "VALID_MAX_LEN", limit)
    assert too_long_to_validate(corpus) == 1
    torch.manual_seed(0)
    model = build_model({"arch": "rnnsearch", "emb_size": 8, "enc_size": 8, "dec_size": 8, "param_init": 0.5},
                        corpus.meta).eval()
    scored = []

    def record(metric, hyps, refs, tokenize):
        scored.append(hyps)
        return corpus_score(metric, hyps, refs, tokenize=tokenize)

    monkeypatch.setattr(validation, "corpus_score", record)
    read = []  # (the widest input each batch to translate gave the model, </s> included)

    def batch(examples, target=True, **kwargs):
        made = examples_batch(examples, target, **kwargs)
        read.extend([] if target else [int(made["src"].lengths.max())])
        return made

    monkeypatch.setattr(validation, "examples_batch", batch)
    config = {"valid_max_sentences": 0, "valid_beam": 1, "valid_batch_size": 5, "max_len_a": 1.5, "max_len_b": 3,
              "valid_tokenize": "13a"}
    result = validate(model, corpus, config, torch.device("cpu"))
    shard = Shard(corpus.shard_paths("valid")[0])
    nll, tokens = corpus_nll(model, [examples_batch([(shard, i) for i in range(6)])], torch.device("cpu"))
    assert result["ppl"] == round(perplexity(nll, tokens), 4)
    src = corpus.vocabs["src"]
    cut = translate_ids(model, [src.encode(long_en)[:limit]], SearchOptions(beam_size=1, max_len_b=3), "cpu")[0][0]
    assert scored[0][6] == corpus.tgt_vocab.decode(cut.tokens) and len(scored[0]) == 7 and max(read) == limit + 1

"""corpus_score: sacrebleu's BLEU, chrF and TER with nmtkit's options."""
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from nmtkit.metrics.text import corpus_score

HYP = ["The cat sat on the mat .", "A dog barked at the postman today ."]
REF1 = ["The cat sat on a mat .", "The dog barked at the mailman today ."]
REF2 = ["the cat was sitting on the mat .", "A dog barked at the postman ."]
SACREBLEU = {"bleu": lambda lc: BLEU(lowercase=lc), "chrf": lambda lc: CHRF(lowercase=lc),
             "chrf++": lambda lc: CHRF(lowercase=lc, word_order=2), "ter": lambda lc: TER(case_sensitive=not lc)}


def test_perfect_output_scores_bleu_100_chrf_100_ter_0():
    assert corpus_score("bleu", REF1, [REF1]).score == pytest.approx(100)
    assert corpus_score("chrf", REF1, [REF1]).score == pytest.approx(100)
    assert corpus_score("ter", REF1, [REF1]).score == pytest.approx(0)


@pytest.mark.parametrize("metric", ["bleu", "chrf", "chrf++", "ter"])
@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("refs", [[REF1], [REF1, REF2]])
def test_score_text_and_signature_equal_sacrebleu(metric, lowercase, refs):
    """Same score, formatted result and signature as sacrebleu's own metric object, with one or two references."""
    m = SACREBLEU[metric](lowercase)
    expected = m.corpus_score(HYP, refs)
    got = corpus_score(metric, HYP, refs, lowercase=lowercase)
    assert (got.metric, got.score, got.text) == (metric, expected.score, str(expected))
    assert got.signature == str(m.get_signature()) and f"nrefs:{len(refs)}" in got.signature
    assert 0 < got.score < 100


@pytest.mark.parametrize("metric, cased, lowered", [("bleu", 61.48, 100), ("chrf", 76.71, 100), ("ter", 28.57, 0)])
def test_lowercase_ignores_case_differences(metric, cased, lowered):
    """Case-sensitive by default (TER too, unlike sacrebleu's default); lowercase makes case irrelevant."""
    hyp, ref = ["The Cat sat on the mat ."], [["the cat sat on the mat ."]]
    assert corpus_score(metric, hyp, ref).score == pytest.approx(cased, abs=0.005)
    assert corpus_score(metric, hyp, ref, lowercase=True).score == pytest.approx(lowered)
    assert "case:lc" in corpus_score(metric, hyp, ref, lowercase=True).signature


@pytest.mark.parametrize("tokenize", ["char", "zh"])
def test_bleu_tokenizer_is_passed_to_sacrebleu(tokenize):
    """Unsegmented Chinese gets credit only with a character-level tokenizer, named in the signature."""
    hyp, refs = ["我爱你们。"], [["我爱你。"]]
    got = corpus_score("bleu", hyp, refs, tokenize=tokenize)
    assert got.score == BLEU(tokenize=tokenize).corpus_score(hyp, refs).score > 0
    assert f"tok:{tokenize}" in got.signature
    assert corpus_score("bleu", hyp, refs).score == 0 and "tok:13a" in corpus_score("bleu", hyp, refs).signature


def test_unknown_metric_is_a_value_error():
    with pytest.raises(ValueError, match="unknown metric 'meteor'"):
        corpus_score("meteor", HYP, [REF1])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_bleu_n_without_brevity_penalty_is_the_geometric_mean_of_the_precisions(n):
    """By hand from sacrebleu's clipped n-gram counts: exp(Σ_k log(matches_k / totals_k) / n), no BP."""
    import math

    hyp = HYP[:1] + ["A dog ."]  # short: BP < 1
    stats = BLEU(max_ngram_order=n).corpus_score(hyp, [REF1, REF2])
    expected = 100 * math.exp(sum(math.log(c / t) for c, t in zip(stats.counts, stats.totals)) / n)
    got = corpus_score("bleu", hyp, [REF1, REF2], max_ngram=n, brevity_penalty=False)
    assert got.score == pytest.approx(expected) and stats.bp < 1
    assert got.score > corpus_score("bleu", hyp, [REF1, REF2], max_ngram=n).score == pytest.approx(stats.score)
    assert got.signature.endswith("|bp:off") and f"BLEU-{n} without brevity penalty" in got.text


def test_references_missing_for_some_lines_are_left_out():
    with_none = corpus_score("bleu", HYP, [REF1, [REF2[0], None]])
    assert with_none.score == BLEU().corpus_score(HYP, [REF1, [REF2[0], None]]).score
    assert corpus_score("cider", HYP, [REF1, [REF2[0], None]]).score > 0


def test_hter_is_the_edits_per_post_edit_word():
    """HTER (APE): two insertions and a substitution turn the MT output into its 9-word post-edit: 3 / 9."""
    mt, pe = "click the button to save file .", "click the green button to store the file ."
    assert corpus_score("ter", [mt], [[pe]]).score == pytest.approx(100 * 3 / 9)


@pytest.mark.parametrize("metric", ["bleu", "chrf++"])
def test_a_bootstrap_gives_sacrebleus_confidence_interval(metric):
    m = SACREBLEU[metric](False)
    expected = m.corpus_score(HYP * 20, [REF1 * 20], n_bootstrap=200)
    got = corpus_score(metric, HYP * 20, [REF1 * 20], n_bootstrap=200)
    assert (got.score, got.mean, got.ci, got.text) == (expected.score, expected._mean, expected._ci, str(expected))
    assert "bs:200" in got.signature and "μ = " in got.text


def test_a_bootstrap_mean_of_0_is_given_too():
    """(sacrebleu's own line leaves out a mean of 0: a perfect TER)"""
    got = corpus_score("ter", REF1, [REF1], n_bootstrap=20)
    assert got.text == "TER = 0.00 (μ = 0.00 ± 0.00)" and got.mean == 0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_bleu_n_is_named_in_its_line_and_signature(n):
    got = corpus_score("bleu", HYP, [REF1], max_ngram=n)
    expected = BLEU(max_ngram_order=n).corpus_score(HYP, [REF1])
    assert got.score == expected.score and got.text == str(expected).replace("BLEU = ", f"BLEU-{n} = ")
    assert got.signature.endswith(f"|ngram:{n}") and "ngram" not in corpus_score("bleu", HYP, [REF1]).signature


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")  # (sacrebleu's own call)
def test_a_tokenizer_sacrebleu_cannot_download_is_one_line(tmp_path, monkeypatch, caplog):
    """(sacrebleu's notice that spm is now flores101 went to stderr before the one-line error.)"""
    from sacrebleu.tokenizers import tokenizer_spm

    from nmtkit.errors import NmtkitError
    from nmtkit.metrics.text import check_tokenizer

    def offline(url, path):
        raise OSError("no network")

    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(tmp_path))
    monkeypatch.setattr(tokenizer_spm, "download_file", offline)
    with pytest.raises(NmtkitError, match="^--tokenize spm: sacrebleu cannot load this tokenizer: no network$"):
        check_tokenizer("spm")
    assert not [record for record in caplog.records if record.name == "sacrebleu"]

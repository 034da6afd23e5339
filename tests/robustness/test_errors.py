"""Bad input that used to end in a traceback or a silent wrong result: empty files to score, unknown tokenizers, a
missing run folder, ensemble weights that are not finite and positive, tiny sampling temperatures, feature files
of another shape than the model's. Each is one line on stderr naming the file or option, or a well-defined result."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run


def fails(args: list, code: int, *words: object, input: str | None = None) -> str:
    """Run a command that must exit with ``code`` after one line "error: ..." holding ``words``; that line."""
    r = run(args, input=input, ok=False)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == code and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for word in words:
        assert str(word) in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter", "cider"])
def test_scoring_empty_files_is_an_error_naming_them(metric, tmp_path):
    empty, one = tmp_path / "empty", tmp_path / "one"
    empty.write_text("")
    one.write_text("a cat\n")
    fails(["score", "--metric", metric, "-r", empty, "-i", empty], 1, f"{empty} and reference {empty} are empty")
    fails(["score", "--metric", metric, "-r", empty], 1, f"<stdin> and reference {empty} are empty", input="")
    fails(["score", "--metric", metric, "--tab-refs", "-r", empty, "-i", empty], 1, "are empty")
    fails(["score", "--metric", metric, "-r", one, "-i", empty], 1, f"{empty} has 0 lines but reference {one} has 1")


def test_an_unknown_tokenizer_is_refused_before_the_files_are_read(tmp_path):
    line = fails(["score", "--tokenize", "13b", "-r", tmp_path / "missing"], 2, "--tokenize: unknown tokenizer '13b'")
    assert "known: 13a, char, " in line and "intl" in line


def test_a_tokenizer_sacrebleu_cannot_load_is_one_line(tmp_path):
    pytest.importorskip("sacrebleu.tokenizers.tokenizer_ja_mecab")
    from sacrebleu.tokenizers import tokenizer_ja_mecab

    if tokenizer_ja_mecab.MeCab is not None:
        pytest.skip("MeCab is installed")
    fails(["score", "--tokenize", "ja-mecab", "-r", tmp_path / "missing"], 1,
          "--tokenize ja-mecab: sacrebleu cannot load this tokenizer", "pip install sacrebleu[ja]")


def test_average_names_a_run_folder_that_is_not_there(tmp_path):
    fails(["average", "--run", tmp_path / "nothing", "-o", tmp_path / "x.pt"], 2, "--run", tmp_path / "nothing")
    (tmp_path / "file").write_text("")
    fails(["average", "--run", tmp_path / "file", "-o", tmp_path / "x.pt"], 2, "--run", tmp_path / "file")


@pytest.mark.parametrize("weights", ["nan,1", "inf,1", "1,-inf", "0,1", "-1,2", "1e400,1"])
def test_ensemble_weights_must_be_finite_and_positive(trained_ckpt, weights):
    fails(["translate", "-m", trained_ckpt, "-m", trained_ckpt, "--weights", weights], 2,
          "--weights: expects finite numbers above 0", input="one\n")


def test_huge_ensemble_weights_weigh_as_their_ratio(trained_ckpt):
    """1e308,1e308 are 1,1: the same outputs and scores (their sum no longer overflows)."""
    args = ["translate", "-m", trained_ckpt, "-m", trained_ckpt, "--beam", 3, "--n-best", 2]
    lines = "forty-two\nseven hundred one\n"
    assert run([*args, "--weights", "1e308,1e308"], input=lines).stdout == run([*args, "--weights", "1,1"],
                                                                                  input=lines).stdout


def test_a_tiny_temperature_samples_the_greedy_output(trained_ckpt, text_dir):
    test = text_dir / "test.en"
    greedy = run(["translate", "-m", trained_ckpt, "--greedy", "-i", test]).stdout
    for temperature in ("1e-30", "1e-45", "5e-324"):
        sampled = run(["translate", "-m", trained_ckpt, "--sampling", "--temperature", temperature, "-i", test]).stdout
        assert sampled == greedy, temperature


@pytest.fixture(scope="module")
def captioner(tmp_path_factory) -> Path:
    """A show-attend-tell trained for one step on the features of a VGG16 at 32 px (a 2 x 2 grid of 512)."""
    from tests.data.test_captions import write_images

    root = tmp_path_factory.mktemp("caption")
    write_images(root)
    run(["preprocess", "--captions", root / "captions.token", "--images", root, "--train", root / "train.txt",
         "--valid", root / "valid.txt", "--test", root / "test.txt", "--tgt", "en", "--image-size", 32,
         "-o", root / "corpus"])
    run(["train", "--data", root / "corpus", "--arch", "show-attend-tell", "--save-dir", root / "run",
         "--emb-size", 8, "--dec-size", 8, "--max-steps", 1, "--valid-every", 1, "--batch-size", 4])
    return root / "run" / "best.pt"


@pytest.fixture(scope="module")
def multimodal(tmp_path_factory) -> Path:
    """A multi-source model over text and the features of a VGG16 at 32 px, trained for one step; its folder."""
    from tests.data.test_multimodal import trained_multimodal

    return trained_multimodal(tmp_path_factory.mktemp("multimodal"), "--max-steps", 1, "--valid-every", 1)


def features(folder: Path, name: str, shape: tuple[int, ...]) -> Path:
    path = folder / name
    np.save(path, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    return path


@pytest.mark.parametrize("shape", [(2, 4, 7), (2, 9, 512)])
def test_caption_features_of_another_shape_are_refused(captioner, tmp_path, shape):
    path = features(tmp_path, "f.npy", shape)
    fails(["caption", "-m", captioner, "--features", path], 2,
          f"--features {path}: features of shape {shape}, but this show-attend-tell model reads [images, 4, 512]")
    refs = tmp_path / "refs"
    refs.write_text("a disc\na square\n")
    fails(["score", "--metric", "ppl", "-m", captioner, "--src", path, "-r", refs], 2,
          f"--src {path}: features of shape {shape}, but this show-attend-tell model reads [images, 4, 512]")
    ok = features(tmp_path, "ok.npy", (2, 4, 512))
    assert run(["caption", "-m", captioner, "--features", ok]).stdout.count("\n") == 2


def test_caption_features_for_a_translation_model_are_refused(trained_ckpt, tmp_path):
    fails(["caption", "-m", trained_ckpt, "--features", features(tmp_path, "f.npy", (2, 4, 512))], 2,
          f"{trained_ckpt}: a rnnsearch model reads src, not images; use 'nmtkit translate'")


@pytest.mark.parametrize("shape", [(2, 4, 7), (2, 9, 512)])
def test_translate_features_of_another_shape_are_refused(multimodal, tmp_path, shape):
    path = features(tmp_path, "f.npy", shape)
    fails(["translate", "-m", multimodal / "run" / "last.pt", "-i", multimodal / "data" / "test.en", "--features",
           path], 2, f"--features {path}: features of shape {shape}, but this multi-source model reads "
                     "[images, 4, 512]")
    ok = features(tmp_path, "ok.npy", (2, 4, 512))
    assert run(["translate", "-m", multimodal / "run" / "last.pt", "-i", multimodal / "data" / "test.en",
                "--features", ok]).stdout.count("\n") == 2


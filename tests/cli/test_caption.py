"""nmtkit caption end to end on tiny pictures: one caption per input line (empty for an empty or unreadable one),
attention over the image grid, features made as the corpus made them (CNN weights checked by checksum)."""
import shutil

import h5py
import numpy as np
import pytest
import torch

from nmtkit.data.vgg import VGG16Features
from nmtkit.inference import load_model
from tests.conftest import run
from tests.data.test_captions import write_features, write_images


@pytest.fixture(scope="module")
def captioner(tmp_path_factory):
    """A show-attend-tell trained briefly on features of CNN weights from a file; the folder with it all."""
    root = tmp_path_factory.mktemp("caption")
    write_images(root)
    torch.manual_seed(5)
    torch.save(VGG16Features().state_dict(), root / "vgg16.pth")
    run(["preprocess", "--captions", root / "captions.token", "--images", root, "--train", root / "train.txt",
         "--valid", root / "valid.txt", "--test", root / "test.txt", "--tgt", "en", "--image-size", 32,
         "--cnn-weights", root / "vgg16.pth", "-o", root / "corpus"])
    run(["train", "--data", root / "corpus", "--arch", "show-attend-tell", "--save-dir", root / "run",
         "--emb-size", 16, "--dec-size", 24, "--max-steps", 30, "--valid-every", 30, "--batch-size", 8,
         "--target-attention"])
    return root


def test_one_caption_per_line_with_empty_and_unreadable_images(captioner, tmp_path):
    images = (captioner / "corpus" / "test.images").read_text().split()
    (tmp_path / "broken.png").write_bytes(b"no picture")
    lines = [images[0], "", str(tmp_path / "broken.png"), images[1]]
    r = run(["caption", "-m", captioner / "run" / "best.pt", "--beam", 3, "--attention-out", tmp_path / "a.h5"],
            input="\n".join(lines) + "\n", ok=False)
    assert r.exit_code == 1 and "1 line(s) naming an unreadable image (line 3)" in r.stderr
    out = r.stdout.split("\n")
    assert len(out) == 5 and out[1] == "" and out[2] == "" and out[4] == ""
    with h5py.File(tmp_path / "a.h5") as f:
        sentence = f["sentences/0"]
        assert [t.decode() for t in sentence["src_tokens"][()]] == ["r0c0", "r0c1", "r1c0", "r1c1"]
        weights = sentence["attention/source"][()]
        assert weights.shape == (len(out[0].split()) + 1, 4)
        assert abs(weights.sum(1) - 1).max() < 1e-5


def test_an_output_naming_a_listed_image_is_refused_and_the_image_kept(captioner, tmp_path):
    """(-o naming one of the images the -i list names replaced that image by the captions)"""
    image = tmp_path / "photo.png"
    shutil.copy((captioner / "corpus" / "test.images").read_text().split()[0], image)
    (tmp_path / "list.txt").write_text(f"\n{image}\n")
    before = image.read_bytes()
    r = run(["caption", "-m", captioner / "run" / "best.pt", "-i", tmp_path / "list.txt", "-o", image], ok=False)
    assert r.exit_code == 2 and r.stderr.strip() == (f"error: --output {image}: is the file of the image on line 2 of "
                                                     "-i; write the output to another file")
    assert image.read_bytes() == before


def test_a_translation_s_length_limit_is_refused_for_a_captioner(captioner, tmp_path):
    """(validation ignored it: a caption ends at --max-caption-len)"""
    r = run(["train", "--data", captioner / "corpus", "--arch", "show-attend-tell", "--save-dir", tmp_path / "r",
             "--max-len-b", 5], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --max-len-b: goes with a translation model (a caption ends at "
                                             "--max-caption-len)\n")


def test_captions_take_a_prefix_and_constraints(captioner, tmp_path):
    images = (captioner / "corpus" / "test.images").read_text().split()[:2]
    model = captioner / "run" / "best.pt"
    word = load_model(model).tgt_vocab.id_to_token([4])[0]  # the most frequent caption word
    (tmp_path / "prefix").write_text(f"{word} {word}\n\n")
    (tmp_path / "constraints").write_text(f'["{word} {word} {word}"]\n[]\n')
    r = run(["caption", "-m", model, "--prefix-file", tmp_path / "prefix", "--constraints", tmp_path / "constraints"],
            input="\n".join(images) + "\n")
    first = r.stdout.split("\n")[0]
    assert first.startswith(f"{word} {word}") and f"{word} {word} {word}" in first


def test_an_ensemble_of_two_copies_captions_as_one_model(captioner):
    images = (captioner / "corpus" / "test.images").read_text().split()
    model = captioner / "run" / "best.pt"
    one = run(["caption", "-m", model, "--beam", 3, "--n-best", 2], input="\n".join(images)).stdout
    two = run(["caption", "-m", model, "-m", model, "--beam", 3, "--n-best", 2], input="\n".join(images)).stdout
    assert [line.rsplit(" ||| ", 1)[0] for line in one.splitlines()] == \
        [line.rsplit(" ||| ", 1)[0] for line in two.splitlines()] and len(one.splitlines()) == 2 * len(images)


def test_the_cnn_weights_are_found_again_and_checked(captioner, tmp_path):
    images = (captioner / "corpus" / "test.images").read_text()
    model = captioner / "run" / "best.pt"
    before = run(["caption", "-m", model, "--greedy"], input=images).stdout
    moved = tmp_path / "moved.pth"
    shutil.move(captioner / "vgg16.pth", moved)
    try:
        r = run(["caption", "-m", model, "--greedy"], input=images, ok=False)
        assert f"{captioner / 'vgg16.pth'}: the CNN weights the features were made with are not there" in r.stderr
        assert run(["caption", "-m", model, "--greedy", "--cnn-weights", moved], input=images).stdout == before
        torch.save(VGG16Features().state_dict(), tmp_path / "other.pth")
        r = run(["caption", "-m", model, "--cnn-weights", tmp_path / "other.pth"], input=images, ok=False)
        assert "not the weights the features were made with" in r.stderr
    finally:
        shutil.move(moved, captioner / "vgg16.pth")


def test_a_translation_model_is_refused_and_translate_refuses_a_captioner(trained_ckpt, captioner):
    r = run(["caption", "-m", trained_ckpt], input="x.png\n", ok=False)
    assert "reads src, not images; use 'nmtkit translate'" in r.stderr
    r = run(["translate", "-m", captioner / "run" / "best.pt"], input="x\n", ok=False)
    assert r.exit_code == 2 and r.stderr == (f"error: {captioner / 'run' / 'best.pt'}: a show-attend-tell model reads "
                                             "images alone (a captioning model); use 'nmtkit caption'\n")


def test_caption_makes_the_features_the_corpus_holds(captioner):
    from nmtkit.data.captions import ImageSpec
    from nmtkit.data.shards import Corpus, Shard
    from nmtkit.inference import load_model
    from nmtkit.search.sources import ImageSource

    corpus = Corpus.open(captioner / "corpus")
    shard = Shard(corpus.folder / corpus.manifest["splits"]["test"]["shards"][0]["file"])
    spec = ImageSpec.from_record(load_model(captioner / "run" / "best.pt").images)
    paths = (corpus.folder / "test.images").read_text().split() * 3  # the 2 test images, 3 times
    for batch_size in (1, 4):  # one image at a time; batches of 4 and 2
        source = ImageSource(spec.network(), spec.size, batch_size=batch_size)
        made = source.finish([source.read(k, path.encode()) for k, path in enumerate(paths)])
        assert len(made) == len(paths) == 6
        for k, features in enumerate(made):
            torch.testing.assert_close(torch.from_numpy(features).half(), torch.from_numpy(shard.get("image", k % 2)))


def test_score_captions_with_every_reference_and_the_perplexity_of_a_captioner(captioner):
    corpus = captioner / "corpus"
    hyps = "a red disc\nred disc\n"  # test images 7 and 8: a blue disc... whatever: any text scores
    refs = corpus / "test.en"
    bleu = run(["score", "--metric", "bleu", "--max-ngram", 3, "--no-brevity-penalty", "--tab-refs", "-r", refs],
               input=hyps).stdout
    assert "BLEU-3 without brevity penalty" in bleu and "nrefs:2" in bleu
    cider = run(["score", "--metric", "cider", "--tab-refs", "-r", refs, "--score-only"], input=hyps).stdout
    assert float(cider) >= 0
    ppl = run(["score", "--metric", "ppl", "-m", captioner / "run" / "best.pt", "--src", corpus / "test.images",
               "--tab-refs", "-r", refs, "--score-only"]).stdout
    assert 1 < float(ppl) < 1000
    r = run(["score", "--metric", "cider", "--tab-refs", "-r", refs, "-r", refs], input=hyps, ok=False)
    assert "--tab-refs: give one -r file" in r.stderr


def test_the_perplexity_of_images_equals_that_of_the_corpus_features(captioner, tmp_path):
    from nmtkit.data.batching import examples_batch
    from nmtkit.data.shards import Corpus, Shard
    from nmtkit.inference import load_model
    from nmtkit.metrics.perplexity import corpus_nll, perplexity

    corpus = Corpus.open(captioner / "corpus")
    first = [line.split("\t")[0] for line in (corpus.folder / "test.en").read_text().splitlines()]
    (tmp_path / "first.en").write_text("\n".join(first) + "\n")
    ppl = run(["score", "--metric", "ppl", "-m", captioner / "run" / "best.pt", "--src", corpus.folder / "test.images",
               "-r", tmp_path / "first.en", "--score-only"]).stdout
    shard = Shard(corpus.folder / corpus.manifest["splits"]["test"]["shards"][0]["file"])
    model = load_model(captioner / "run" / "best.pt").model
    stored = perplexity(*corpus_nll(model, [examples_batch([(shard, i) for i in range(len(shard))])], "cpu"))
    assert float(ppl) == pytest.approx(stored, rel=1e-3)  # features recomputed in fp32, stored in fp16


def test_plot_attn_overlays_a_captions_attention_on_its_image(captioner, tmp_path):
    image = (captioner / "corpus" / "test.images").read_text().split()[0]
    run(["caption", "-m", captioner / "run" / "best.pt", "--attention-out", tmp_path / "a.h5"], input=image + "\n")
    run(["plot-attn", tmp_path / "a.h5", "--index", 0, "--image", image, "-o", tmp_path / "all.png"])
    run(["plot-attn", tmp_path / "a.h5", "--index", 0, "--image", image, "--word", 0, "-o", tmp_path / "one.png"])
    assert (tmp_path / "all.png").stat().st_size > 1000 and (tmp_path / "one.png").stat().st_size > 1000
    r = run(["plot-attn", tmp_path / "a.h5", "--index", 0, "--image", image, "--word", 99, "-o", tmp_path / "x.png"],
            ok=False)
    assert "--word: sentence 0 has output tokens 0.." in r.stderr and not (tmp_path / "x.png").exists()


def test_plot_attn_refuses_an_image_for_a_translation(trained_ckpt, tmp_path):
    run(["translate", "-m", trained_ckpt, "--attention-out", tmp_path / "t.h5"], input="forty-two\n")
    (tmp_path / "p.png").write_bytes(b"")
    r = run(["plot-attn", tmp_path / "t.h5", "--index", 0, "--image", tmp_path / "p.png", "-o", tmp_path / "o.png"],
            ok=False)
    assert "not to an image's feature grid" in r.stderr


def test_precomputed_features_are_captioned_and_scored_row_by_row(tmp_path):
    write_images(tmp_path)
    arrays = write_features(tmp_path, 4, 6)
    run(["preprocess", "--captions", tmp_path / "captions.token", "--train", tmp_path / "train.txt",
         "--valid", tmp_path / "valid.txt", "--test", tmp_path / "test.txt", "--tgt", "en",
         *[x for s in arrays for x in ("--features", f"{s}={tmp_path / s}.npy")], "-o", tmp_path / "corpus"])
    run(["train", "--data", tmp_path / "corpus", "--arch", "show-attend-tell", "--save-dir", tmp_path / "run",
         "--emb-size", 8, "--dec-size", 8, "--max-steps", 4, "--valid-every", 4, "--batch-size", 4])
    model = tmp_path / "run" / "last.pt"
    out = run(["caption", "-m", model, "--features", tmp_path / "test.npy", "--attention-out", tmp_path / "a.h5"])
    assert len(out.stdout.split("\n")) == 3  # two rows, two lines
    (tmp_path / "prefix").write_text("a\n\n")
    prefixed = run(["caption", "-m", model, "--features", tmp_path / "test.npy", "--prefix-file", tmp_path / "prefix"])
    assert prefixed.stdout.split("\n")[0].split()[:1] == ["a"] and len(prefixed.stdout.split("\n")) == 3
    with h5py.File(tmp_path / "a.h5") as f:
        assert [t.decode() for t in f["sentences/1/src_tokens"][()]] == ["r0c0", "r0c1", "r1c0", "r1c1"]
        assert f.attrs["input"] == f"--features {tmp_path / 'test.npy'}"  # (what was read: no '<stdin>')
    broken = arrays["test"].copy()
    broken[1, 0, 2] = float("nan")
    np.save(tmp_path / "nan.npy", broken)
    r = run(["caption", "-m", model, "--features", tmp_path / "nan.npy", "-o", tmp_path / "nan.txt"], ok=False)
    assert r.exit_code == 2 and r.stderr == (f"error: --features {tmp_path / 'nan.npy'}: the features of image 2 are "
                                             "not all finite numbers (NaN or infinite)\n")
    r = run(["caption", "-m", model], input=str(tmp_path / "img0.png") + "\n", ok=False)
    assert "its corpus had precomputed features" in r.stderr
    r = run(["caption", "-m", model, "--features", tmp_path / "test.npy", "--cnn-weights", tmp_path / "test.npy"],
            ok=False)
    assert r.exit_code == 2 and r.stderr == "error: --cnn-weights: goes with images (not --features)\n"
    ppl = run(["score", "--metric", "ppl", "-m", model, "--src", tmp_path / "test.npy", "--tab-refs",
               "-r", tmp_path / "corpus" / "test.en", "--score-only"]).stdout
    assert float(ppl) > 1
    r = run(["score", "--metric", "ppl", "-m", model, "--src", tmp_path / "test.npy", "--src", tmp_path / "test.txt",
             "--tab-refs", "-r", tmp_path / "corpus" / "test.en"], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --src: this show-attend-tell model reads image alone, from the "
                                             "features file; give no other --src (got 1)\n")
    r = run(["caption", "-m", model, "--features", tmp_path / "test.txt"], ok=False)  # (numpy took it for a pickle)
    assert r.exit_code == 2 and r.stderr == (f"error: --features {tmp_path / 'test.txt'}: not a NumPy .npy file (nor "
                                             "HDF5, .h5 or .hdf5, with a dataset 'features')\n")

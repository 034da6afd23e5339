"""nmtkit plot-attn end to end, on an attention file written by translate and on a generated one."""
import numpy as np
from PIL import Image

from nmtkit.search.attention_file import AttentionWriter
from tests.conftest import run


def test_source_attention_of_a_translation(trained_ckpt, tmp_path):
    run(["translate", "-m", trained_ckpt, "--attention-out", tmp_path / "a.h5"], input="forty-two\n\none\n")
    run(["plot-attn", tmp_path / "a.h5", "--index", 0, "-o", tmp_path / "a.png"])
    with Image.open(tmp_path / "a.png") as image:
        assert image.size[0] > 200 and image.size[1] > 200
    r = run(["plot-attn", tmp_path / "a.h5", "--index", 1, "-o", tmp_path / "b.png"], ok=False)
    assert "sentence 1 is empty" in r.stderr
    r = run(["plot-attn", tmp_path / "a.h5", "--index", 0, "--kind", "target", "-o", tmp_path / "b.png"], ok=False)
    assert "has no 'target' attention (it has: source)" in r.stderr
    r = run(["plot-attn", tmp_path / "a.h5", "--index", 3, "-o", tmp_path / "b.png"], ok=False)
    assert "no sentence 3 (the file has 3" in r.stderr
    assert not (tmp_path / "b.png").exists()


def test_target_and_encoder_kinds_from_a_generated_file(tmp_path):
    w = AttentionWriter(tmp_path / "g.h5")
    w.add(0, ["a", "b", "</s>"], ["x", "y", "z", "</s>"],
          {"source": np.full((4, 3), 1 / 3), "target": np.tril(np.ones((4, 3)), -1) / np.maximum(np.arange(4), 1)[:, None],
           "encoders": np.full((4, 3), 1 / 3)}, {"encoders": ["source", "image", "sentinel"]})
    w.close()
    for kind, extra in (("target", []), ("target", ["--word", 2]), ("encoders", [])):
        out = tmp_path / f"{kind}{len(extra)}.svg"
        run(["plot-attn", tmp_path / "g.h5", "--index", 0, "--kind", kind, *extra, "-o", out])
        assert out.read_text().startswith("<?xml")
    r = run(["plot-attn", tmp_path / "g.h5", "--index", 0, "--kind", "target", "--word", 9, "-o", tmp_path / "w.png"],
            ok=False)
    assert r.exit_code == 2 and "--word: sentence 0 has output tokens 0..3" in r.stderr
    for kind in ("target", "encoders"):  # (an image shows the source attention alone)
        r = run(["plot-attn", tmp_path / "g.h5", "--index", 0, "--kind", kind, "--image", tmp_path / "g.h5", "-o",
                 tmp_path / "i.png"], ok=False)
        assert r.exit_code == 2 and r.stderr == "error: --image draws the source attention over an image; drop --kind\n"
        assert not (tmp_path / "i.png").exists()
    (tmp_path / "junk.h5").write_text("junk")
    r = run(["plot-attn", tmp_path / "junk.h5", "--index", 0, "-o", tmp_path / "w.png"], ok=False)
    assert "not an nmtkit attention file" in r.stderr

"""Image data on its own: caption files read line by line, pictures read as RGB in [0, 1] the right way up, features
made in batches in the order of their images, and the spec a manifest records read back (tests/data/test_captions.py
and test_multimodal.py build corpora from them)."""
import pytest
import torch
from PIL import Image

from nmtkit.data.images import ImageSpec, extract_features, load_image, read_captions
from nmtkit.errors import NmtkitError


def test_caption_lines_of_three_fields_are_refused_and_a_byte_order_mark_is_no_part_of_a_name(tmp_path):
    (tmp_path / "c.tsv").write_bytes("\ufeffx.jpg\ta dog\nx.jpg\ta cat\n".encode("utf-8"))
    assert read_captions(tmp_path / "c.tsv") == {"x.jpg": ["a dog", "a cat"]}
    (tmp_path / "c.tsv").write_text("x.jpg\ta dog\ny.jpg\ta cat\textra\n")
    with pytest.raises(NmtkitError, match=r"c.tsv:2: expected IMAGE<TAB>caption"):
        read_captions(tmp_path / "c.tsv")
    (tmp_path / "c.tsv").write_bytes(b"x.jpg\ta dog\ny.jpg\ta \xff\n")
    with pytest.raises(NmtkitError, match=r"c.tsv:2: invalid UTF-8 \(byte 9 of the line\)"):
        read_captions(tmp_path / "c.tsv")


def test_an_image_is_read_as_rgb_in_0_1_channels_first_and_the_right_way_up(tmp_path):
    picture = Image.new("RGB", (32, 32), (255, 255, 255))
    picture.paste((220, 20, 20), (0, 0, 16, 32))  # the left half red
    picture.paste((0, 0, 0), (16, 0, 32, 8))  # the top of the right half black
    picture.save(tmp_path / "p.png")
    image = load_image(tmp_path / "p.png", 32)
    assert image.shape == (3, 32, 32) and image.dtype == torch.float32
    assert torch.equal(image[:, :, 0], torch.tensor([220 / 255, 20 / 255, 20 / 255]).repeat(32, 1).T)  # left column
    assert torch.equal(image[:, 0, 31], torch.zeros(3)) and torch.equal(image[:, 31, 31], torch.ones(3))  # white: 1


class MeanColour(torch.nn.Module):
    """A stand-in CNN: each image's mean colour, as one grid cell."""

    def __init__(self):
        super().__init__()
        self.zero = torch.nn.Parameter(torch.zeros(1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return images.mean((2, 3)).unsqueeze(1) + self.zero


def test_features_come_in_the_order_of_their_images_across_batches_and_a_bad_one_is_named_by_its_line(tmp_path):
    shades = [0, 51, 102, 153, 204]
    for k, shade in enumerate(shades):
        Image.new("RGB", (8, 8), (shade, shade, shade)).save(tmp_path / f"{k}.png")
    paths = [tmp_path / f"{k}.png" for k in range(5)]
    features = list(extract_features(MeanColour(), paths, 8, batch_size=2, dtype="float32"))
    assert len(features) == 5 and [float(f[0, 0]) for f in features] == pytest.approx([s / 255 for s in shades])
    paths[2] = tmp_path / "gone.png"
    names = [f"list.txt:{k + 1}" for k in range(5)]
    with pytest.raises(NmtkitError, match=f"^list.txt:3: {tmp_path / 'gone.png'}: no such image$"):
        list(extract_features(MeanColour(), paths, 8, batch_size=2, names=names))
    skipped = list(extract_features(MeanColour(), paths, 8, batch_size=2, skip_bad=True, names=names))
    assert [f is None for f in skipped] == [False, False, True, False, False]


def test_the_spec_a_manifest_records_is_read_back_whole():
    spec = ImageSpec(size=32, seed=5, dtype="float32")
    assert ImageSpec.from_record(spec.record()) == spec
    assert ImageSpec.from_record(ImageSpec(size=64).record()).dtype == "float16"
    assert spec.grid == 4  # ((32 / 16)²)

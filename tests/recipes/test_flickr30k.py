"""recipes/flickr30k.sh end to end on a tiny stand-in for Flickr30k, its downloads served by a mock downloader
from local files (the images as a .tar.gz, Karpathy's split file in a .zip, VGG16 weights), and its --dry-run."""
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch

from nmtkit.data.karpathy import karpathy_split
from nmtkit.data.vgg import VGG16Features
from nmtkit.errors import NmtkitError
from tests.data.test_captions import write_images

RECIPE = Path(__file__).parents[2] / "recipes" / "flickr30k.sh"


def karpathy_json(names, path):
    """A Karpathy split file for ``names``: two tokenised captions each, splits train/restval/val/test."""
    splits = ["train", "restval", "train", "train", "train", "val", "val", "test", "test"]
    images = [{"filename": n, "split": s, "sentences": [{"raw": f"A {n} .", "tokens": ["a", n.split(".")[0]]},
                                                        {"raw": "Some picture", "tokens": ["some", "picture"]}]}
              for n, s in zip(names, splits)]
    path.write_text(json.dumps({"images": images, "dataset": "flickr30k"}))


def test_karpathy_split_files(tmp_path):
    karpathy_json([f"img{i}.png" for i in range(9)], tmp_path / "d.json")
    assert karpathy_split(tmp_path / "d.json", tmp_path / "out") == {"train": 5, "dev": 2, "test": 2}
    assert (tmp_path / "out" / "dev.txt").read_text() == "img5.png\nimg6.png\n"
    assert (tmp_path / "out" / "captions.tsv").read_text().startswith("img0.png\ta img0\nimg0.png\tsome picture\n")
    (tmp_path / "bad.json").write_text('{"images": [{"filename": "x.jpg"}]}')
    with pytest.raises(NmtkitError, match="image 0 lacks 'split'"):
        karpathy_split(tmp_path / "bad.json", tmp_path / "out")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """What the recipe downloads, as local files, and a downloader that serves them by the URL's file name."""
    root = tmp_path_factory.mktemp("mirror")
    pictures = root / "flickr30k-images"
    pictures.mkdir()
    names = write_images(pictures)
    with tarfile.open(root / "flickr30k-images.tar.gz", "w:gz") as tar:
        tar.add(pictures, arcname="flickr30k-images")
    karpathy_json(names, root / "dataset_flickr30k.json")
    with zipfile.ZipFile(root / "caption_datasets.zip", "w") as z:
        z.write(root / "dataset_flickr30k.json", "dataset_flickr30k.json")
    torch.manual_seed(0)
    torch.save(VGG16Features().state_dict(), root / "vgg16-397923af.pth")
    (root / "get.sh").write_text(f'#!/bin/sh\necho "$2" >> {root}/fetched\ncp {root}/"$(basename "$2")" "$1"\n')
    (root / "get.sh").chmod(0o755)
    return root


def recipe(mirror, work, *args):
    env = {**os.environ, "DOWNLOADER": str(mirror / "get.sh"), "IMAGE_SIZE": "32", "STEPS_BASE": "8",
           "STEPS_TATT": "4", "BATCH": "4", "SIZES": "--emb-size 8 --dec-size 8", "DEVICE": "cpu",
           "FLICKR30K_IMAGES": "https://example.org/flickr30k-images.tar.gz",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(RECIPE), *args, str(work)], env=env, capture_output=True, text=True)


def test_the_recipe_downloads_trains_both_models_and_prints_table_3(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w")
    assert r.returncode == 0, r.stderr[-3000:]
    fetched = (mirror / "fetched").read_text().split()
    assert fetched == ["https://example.org/flickr30k-images.tar.gz",
                       "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip",
                       "https://download.pytorch.org/models/vgg16-397923af.pth"]
    table = r.stdout.split("== Table 3")[1].splitlines()
    assert table[2].split()[-4:] == ["28.3", "19.0", "37.6", "28.56"]
    assert table[4].startswith("nmtkit: source-attn") and len(table[5].split()) == 6
    assert len((tmp_path / "w" / "tatt.test.en").read_text().split("\n")) == 3  # two test images
    config = (tmp_path / "w" / "tatt" / "config.yaml").read_text()
    assert "target_attention: true" in config and "optimizer: sgd" in config and "lr: 0.05" in config


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "nmtkit preprocess --captions" in r.stdout and "--init-from" in r.stdout and "--beam 10" in r.stdout
    assert "get.sh" in r.stderr and not (tmp_path / "w").exists()


def test_the_images_must_be_given(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FLICKR30K_IMAGES"}
    r = subprocess.run(["bash", str(RECIPE), str(tmp_path / "w")], env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "FLICKR30K_IMAGES" in r.stderr

"""VGG16 conv5_3 features: the paper's 14 x 14 x 512 grid at 224 px, torchvision's parameter names, and weights files
refused in one line when they are not VGG16's."""
import pickle

import pytest
import torch

from nmtkit.data.vgg import VGG16Features
from nmtkit.errors import NmtkitError

# torchvision's vgg16().features: conv layers at these indices (ReLUs and poolings between)
TORCHVISION_CONVS = [0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28]


def test_a_224_pixel_image_gives_196_vectors_of_512():
    torch.manual_seed(0)
    cnn = VGG16Features().eval()
    with torch.no_grad():
        out = cnn(torch.rand(1, 3, 224, 224))
    assert out.shape == (1, 196, 512) and (out >= 0).all()  # after conv5_3's ReLU
    assert sorted(cnn.state_dict()) == sorted(f"features.{i}.{p}" for i in TORCHVISION_CONVS for p in ("weight", "bias"))


def torchvision_state(cnn):
    state = {k: torch.randn_like(v) for k, v in cnn.state_dict().items()}
    state.update({"classifier.0.weight": torch.zeros(8, 4), "classifier.6.bias": torch.zeros(1000)})
    return state


def test_torchvision_weights_load_by_name_and_the_classifier_is_ignored(tmp_path):
    cnn = VGG16Features()
    state = torchvision_state(cnn)
    torch.save(state, tmp_path / "vgg16.pth")
    cnn.load_weights(tmp_path / "vgg16.pth")
    torch.testing.assert_close(cnn.features[28].weight, state["features.28.weight"])


def test_other_files_are_refused_naming_the_first_mismatch(tmp_path):
    cnn = VGG16Features()
    state = torchvision_state(cnn)
    del state["features.5.bias"]
    torch.save(state, tmp_path / "missing.pth")
    with pytest.raises(NmtkitError, match="no entry 'features.5.bias'"):
        cnn.load_weights(tmp_path / "missing.pth")
    state = torchvision_state(cnn)
    state["features.0.weight"] = torch.zeros(64, 1, 3, 3)
    torch.save(state, tmp_path / "shape.pth")
    with pytest.raises(NmtkitError, match=r"'features.0.weight' has shape \(64, 1, 3, 3\), VGG16 needs \(64, 3, 3, 3\)"):
        cnn.load_weights(tmp_path / "shape.pth")
    state = torchvision_state(cnn)
    state["features.31.weight"] = torch.zeros(1)
    torch.save(state, tmp_path / "extra.pth")
    with pytest.raises(NmtkitError, match="unexpected entry 'features.31.weight'"):
        cnn.load_weights(tmp_path / "extra.pth")
    (tmp_path / "code.pth").write_bytes(pickle.dumps(NmtkitError("code")))  # not loadable without running code
    with pytest.raises(NmtkitError, match="not a PyTorch state dict"):
        cnn.load_weights(tmp_path / "code.pth")
    with pytest.raises(NmtkitError, match="no such file"):
        cnn.load_weights(tmp_path / "absent.pth")


def test_pixels_are_normalised_by_imagenet_s_rgb_statistics_and_the_grid_read_row_by_row():
    """(x - mean) / std per channel, in RGB order (torchvision's weights were trained so); cells numbered as
    grid_labels names them, r0c0, r0c1, r1c0, r1c1."""
    cnn = VGG16Features().eval()
    cnn.features = torch.nn.Identity()  # (the input grid itself, normalised)
    images = torch.zeros(1, 3, 2, 2)
    images[0, :, 0, 1] = 0.5  # row 0, column 1
    mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    out = cnn(images)
    assert out.shape == (1, 4, 3)
    torch.testing.assert_close(out[0, 1], (0.5 - mean) / std)
    for cell in (0, 2, 3):
        torch.testing.assert_close(out[0, cell], -mean / std)

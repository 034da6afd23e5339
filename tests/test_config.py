"""Config files: a YAML mapping, flattened; every problem is one line naming the file (and the line), exit 2."""
import pytest
import yaml

from nmtkit.config import read_yaml
from nmtkit.errors import NmtkitError


def test_a_mapping_is_read_and_its_sections_flattened(tmp_path):
    (tmp_path / "c.yaml").write_text("batch-size: 8\nmodel:\n  emb_size: 16\n")
    assert read_yaml(tmp_path / "c.yaml") == {"batch_size": 8, "emb_size": 16}



def test_a_mapping_under_an_option_s_name_is_its_value_not_a_section(tmp_path):
    """(``batch_size: {}`` was an empty section, the default batch size in force, silently)"""
    (tmp_path / "c.yaml").write_text("batch_size: {}\nlr: {a: 1}\nmodel:\n  emb_size: 16\n")
    assert read_yaml(tmp_path / "c.yaml", {"batch_size", "lr", "emb_size"}) == {"batch_size": {}, "lr": {"a": 1},
                                                                               "emb_size": 16}


def test_a_value_a_colon_b_stays_text(tmp_path):
    """YAML 1.1 reads 1:2 as the base-60 number 62; ``profile: 1:2`` means updates 1 to 2."""
    (tmp_path / "c.yaml").write_text("profile: 1:2\nmax_steps: 0x10\n")
    assert read_yaml(tmp_path / "c.yaml") == {"profile": "1:2", "max_steps": 16}


@pytest.mark.parametrize("content, message", [
    (b"batch_size: 8\nbatch_size: 16\n", "invalid YAML (the key 'batch_size' is given twice, line 2)"),
    (b"model:\n  emb_size: 8\n  emb_size: 16\n", "invalid YAML (the key 'emb_size' is given twice, line 3)"),
    (b"model:\n  dropout: 0.1\ntraining:\n  dropout: 0.3\n", "the key 'dropout' is given twice (lines 2 and 4)"),
    (b"emb_size: 8\nemb-size: 16\n", "the key 'emb_size' is given twice (lines 1 and 2)"),  # (both names of one key)
    (b"\xff\xfe\n", "not UTF-8 text (byte 1)"),
    (b"a: [1\n", "invalid YAML (while parsing a flow sequence, line 2)"),
    (b"- 1\n- 2\n", "a config must be a mapping of keys to values"),
])
def test_a_bad_config_is_one_line_naming_the_file(tmp_path, content, message):
    (tmp_path / "c.yaml").write_bytes(content)
    with pytest.raises(NmtkitError) as e:
        read_yaml(tmp_path / "c.yaml")
    assert str(e.value) == f"{tmp_path / 'c.yaml'}: {message}" and e.value.exit_code == 2


@pytest.mark.parametrize("value", ["[a, b]", "12", "true"])
def test_a_text_option_takes_text_alone(value):
    """(YAML's list, number or boolean was taken as its str(): `save_dir: [a, b]` made a folder "['a', 'b']")"""
    from nmtkit.config import Option

    with pytest.raises(NmtkitError, match=r"^c.yaml: 'save_dir' expects text, got "):
        Option("save_dir", "checkpoints", "a folder").coerce(yaml.safe_load(value), "c.yaml")


def test_a_value_or_key_refused_is_named_with_its_line(tmp_path):
    from nmtkit.config import POSITIVE, Option, resolve

    options = [Option("batch_size", 32, "sentences", allows=POSITIVE), Option("emb_size", 8, "size", allows=POSITIVE)]
    (tmp_path / "c.yaml").write_text("# sizes\nmodel:\n  emb-size: 16\n\nbatch_size: 0\n")
    with pytest.raises(NmtkitError, match=r"^c.yaml:5: 'batch_size' expects an integer >= 1, got 0$"):
        resolve(options, read_yaml(tmp_path / "c.yaml"), {}, "c.yaml")
    (tmp_path / "c.yaml").write_text("emb_size: 16\nbatch: 4\nlr: 1\n")
    with pytest.raises(NmtkitError, match=r"^c.yaml: unknown key\(s\) batch \(line 2\), lr \(line 3\): see "):
        resolve(options, read_yaml(tmp_path / "c.yaml"), {}, "c.yaml")
    assert resolve(options, {"batch_size": 4}, {}, "c.yaml")["batch_size"] == 4  # (values without lines)


def test_a_folder_or_a_missing_file_is_named(tmp_path):
    with pytest.raises(NmtkitError, match="a folder, not a config file"):
        read_yaml(tmp_path)
    with pytest.raises(NmtkitError, match="no such config file"):
        read_yaml(tmp_path / "none.yaml")

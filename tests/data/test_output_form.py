"""The output form: text as it is, or edit operations on an input, made from references and turned back into text,
recorded in manifests and checkpoints."""
import pytest

from nmtkit.data.edits import DELETE, KEEP
from nmtkit.data.output_form import TEXT, OutputForm


def test_text_is_itself_and_reads_no_input():
    assert TEXT == OutputForm.of({}) == OutputForm.of({"max_len": 80}) and TEXT.record() == {} and TEXT.reads == ()
    assert TEXT.text("a b", {}) == "a b" and TEXT.target("a b", {}) == "a b" and TEXT.describe() == "text"
    assert TEXT.texts(["x", "y"], {}) == ["x", "y"]


def test_edit_operations_turn_references_into_targets_and_outputs_into_text():
    form = OutputForm.of({"options": 1, "ape_edits": "mt"})
    assert form == OutputForm("mt") and form.record() == {"ape_edits": "mt"} and form.reads == ("mt",)
    mt, pe = "das ist gut", "das ist sehr gut"
    target = form.target(pe, {"mt": mt, "src": "this is very good"})
    assert target == f"{KEEP} {KEEP} sehr {KEEP}" and form.text(target, {"mt": mt}) == pe
    assert form.texts([f"{KEEP} b", f"{DELETE} x"], {"mt": ["a", "c d", "unused"]}) == ["a b", "x d"]
    assert form.texts([f"{KEEP} b"], {"mt": ["a"]}) == ["a b"]  # (as many input lines as outputs)
    assert form.describe() == "edit operations on its input mt"
    with pytest.raises(ValueError, match="2 outputs for 1 lines of the input mt"):
        form.texts([KEEP, KEEP], {"mt": ["a"]})
    with pytest.raises(ValueError, match="edit operation's name"):
        form.target(f"a {KEEP}", {"mt": "a"})

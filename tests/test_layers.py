"""Imports go one way, down the stages data flows through; inference does not load training."""
import ast
import subprocess
import sys
from pathlib import Path

import nmtkit

ROOT = Path(nmtkit.__file__).parent
# a module may import from its own package and from lower ranks only
RANKS = {"errors": -1, "progress": 0, "config": 0, "device": 0, "compiling": 0, "data": 1, "checkpoint": 1.5, "models": 2,
         "metrics": 3, "search": 3, "inference": 4, "tools": 4, "decoding": 4.5, "serve": 4.7, "train": 5, "cli": 6}


def _part(module: str) -> str:
    """The stage of a dotted module name: ``nmtkit.models.rnnsearch`` -> ``models``."""
    return module.split(".")[1] if "." in module else ""


def imports_of(path: Path) -> list[str]:
    """Every nmtkit module a source file imports, at its top or inside functions."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nmtkit"):
            found += [f"{node.module}.{a.name}" if node.module == "nmtkit" else node.module for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("nmtkit")]
    return found


def test_no_module_imports_upward():
    upward = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        own = _part(".".join(rel.parts))
        if own in ("", "__init__", "__main__"):
            continue
        for target in imports_of(path):
            other = _part(target)
            if other and other != own and other != "__version__" and RANKS[other] >= RANKS[own]:
                upward.append(f"{rel}: {target}")
    assert upward == []


def test_the_layer_check_sees_a_planted_upward_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from nmtkit.search.beam import beam_search\n")
    assert imports_of(bad) == ["nmtkit.search.beam"]


def test_decoding_a_checkpoint_loads_nothing_of_training(trained_ckpt):
    code = f"""
import sys
from nmtkit.inference import load_model
from nmtkit.search.translator import SearchOptions, translate_ids
loaded = load_model({str(trained_ckpt)!r})
translate_ids(loaded.model, [loaded.text_vocab().encode("forty-two")], SearchOptions(beam_size=2), "cpu")
print(sorted(m for m in sys.modules if m.startswith("nmtkit.train") ))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

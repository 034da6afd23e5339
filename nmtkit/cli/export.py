"""nmtkit export: a checkpoint in another toolkit's format (CTranslate2)."""
from __future__ import annotations

import click

from nmtkit.cli.paths import Command, ReadFile

QUANTIZATIONS = ("float32", "int8", "int16", "int8_float32", "float16", "bfloat16")  # CTranslate2's weight types


@click.command("export", cls=Command)
@click.option("--format", "fmt", type=click.Choice(["ctranslate2"]), default="ctranslate2", show_default=True,
              help="the format to write")
@click.option("-m", "--model", "model_path", required=True, type=ReadFile(), help="checkpoint")
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="the model folder to write")
@click.option("--quantization", type=click.Choice(QUANTIZATIONS), default="float32", show_default=True,
              help="weights as stored by CTranslate2")
@click.option("--force", is_flag=True, help="replace an earlier export (never a folder holding anything else)")
def command(fmt, model_path, output, quantization, force):
    """Export a transformer checkpoint for CTranslate2, the CPU/GPU inference engine.

    Writes a CTranslate2 model folder (weights and vocabularies; with SentencePiece vocabularies also
    source.spm.model and target.spm.model, to segment its input and join its output). Needs the
    optional extra: pip install 'nmtkit[ctranslate2]'.

    \b
    nmtkit export -m run/best.pt -o run/ct2 --quantization int8
    python -c "import ctranslate2; t = ctranslate2.Translator('run/ct2'); print(t.translate_batch([['▁Hallo']]))"
    """
    import torch

    from nmtkit.inference import load_model
    from nmtkit.progress import log
    from nmtkit.tools.ctranslate2_export import export_ctranslate2

    loaded = load_model(model_path, torch.device("cpu"))
    folder = export_ctranslate2(loaded.model, loaded.text_vocab("src"), loaded.tgt_vocab, loaded.config, output,
                                quantization, force, [model_path])
    log(f"wrote the CTranslate2 model ({quantization}) to {folder}")

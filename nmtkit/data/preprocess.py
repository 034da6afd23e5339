"""Text to corpus folder: vocabularies, length filter, HDF5 shards, manifest; with an image list beside the text
(multimodal translation), its images' CNN features as the feature stream ``image``."""
from __future__ import annotations

import itertools
import json
import shutil
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from nmtkit.data.edits import DELETE, KEEP
from nmtkit.data.folders import CORPUS, atomic_folder, check_output_folder
from nmtkit.data.images import IMAGE, ImageSpec, SplitFeatures, image_paths
from nmtkit.data.manifest import FORMAT_VERSION, MANIFEST, file_record
from nmtkit.data.output_form import OutputForm
from nmtkit.data.shards import ShardWriter
from nmtkit.data.streams import TARGET, TOKENS
from nmtkit.data.text import (
    PathLike,
    atomic_output,
    check_parallel,
    decode_line,
    iter_lines,
    strip_newline,
)
from nmtkit.data.vocab import SPM_SAMPLE, SentencePieceVocab, Vocab, WordVocab, load_vocab, vocab_filename
from nmtkit.errors import NmtkitError
from nmtkit.progress import log, progress, warn

VOCAB_KINDS = ("spm", "spm-unigram", "spm-bpe", "word")
TARGETS_FOLDER = ".targets"  # targets in an output form other than text, inside the corpus folder while it is written
FAR_SMALLER = 0.9  # warn when a built vocabulary has fewer entries than this fraction of the size asked


@dataclass
class VocabSpec:
    """How to obtain the vocabularies: build ``kind`` of ``size``, or load files."""

    kind: str = "spm"
    size: int = 8000
    joint: Optional[bool] = None  # default: joint for SentencePiece, separate for words
    src_file: Optional[PathLike] = None
    tgt_file: Optional[PathLike] = None
    character_coverage: float = 0.9995  # SentencePiece: the share of the text's characters given their own piece
    sample: int = SPM_SAMPLE  # SentencePiece: the most lines it trains on, sampled from the training text

    @classmethod
    def parse(cls, text: str, **kw) -> "VocabSpec":
        """Parse ``KIND:SIZE`` such as ``spm:8000``, ``spm-bpe:32000`` or ``word:30000``."""
        kind, _, size = text.partition(":")
        if kind not in VOCAB_KINDS or not size.isdigit() or int(size) < 8:
            raise NmtkitError(f"--vocab: expected KIND:SIZE with KIND one of {', '.join(VOCAB_KINDS)} "
                              f"and SIZE a number >= 8, got {text!r}", exit_code=2)
        return cls(kind=kind, size=int(size), **kw)


@dataclass
class SourceImages:
    """``--src-images SUFFIX``: every split's ``PREFIX.SUFFIX`` lists one image a line (a name under ``folder``, or
    an absolute path), line-aligned with the text, for the feature stream ``image``; ``features`` gives splits'
    features precomputed instead (split -> ``.npy``/HDF5 file ``[lines, grid, D]``, no list read)."""

    suffix: str
    folder: Optional[PathLike] = None
    spec: ImageSpec = field(default_factory=ImageSpec)
    features: Mapping[str, PathLike] = field(default_factory=dict)

    def lists(self, splits: Mapping[str, PathLike]) -> dict[str, Path]:
        """The image list of every split whose features are not given."""
        return {split: Path(f"{prefix}.{self.suffix}") for split, prefix in splits.items() if split not in self.features}


def source_streams(specs: Union[str, Sequence[str]]) -> dict[str, str]:
    """Stream name -> file suffix for ``--src`` values: ``en`` (the first source is the stream ``src``,
    a later one is named by its suffix) or ``NAME=SUFFIX``."""
    specs = [specs] if isinstance(specs, str) else list(specs)
    streams: dict[str, str] = {}
    for i, spec in enumerate(specs):
        name, _, suffix = spec.rpartition("=")
        name = name or ("src" if i == 0 else suffix)
        if not name.isidentifier() or name == TARGET or name in streams or not suffix:
            raise NmtkitError(f"--src {spec!r}: give SUFFIX or NAME=SUFFIX, with NAME a new identifier other "
                              f"than {TARGET!r} (streams so far: {', '.join(streams) or 'none'})", exit_code=2)
        streams[name] = suffix
    return streams


def corpus_folder(out: Path, overwrite: bool, inputs: Iterable[PathLike]):
    """:func:`~nmtkit.data.folders.atomic_folder` for a corpus folder written to ``-o out``: an earlier corpus
    replaced with ``--overwrite`` only if it holds nothing else, and never a folder holding one of ``inputs``."""
    return atomic_folder(out, CORPUS, overwrite, "-o", "--overwrite", inputs)


def check_ape_edits(stream: str, sources: Sequence[str], spec: VocabSpec) -> None:
    """``--ape-edits STREAM``: one of several sources, and a word-level target vocabulary (SentencePiece would
    split ``<keep>`` and ``<delete>`` into pieces)."""
    if len(sources) < 2 or stream not in sources:
        raise NmtkitError(f"--ape-edits {stream!r}: name the source stream holding the MT output, beside at least one "
                          f"other source (sources: {', '.join(sources)})", exit_code=2)
    kind = load_vocab(spec.tgt_file).kind if spec.tgt_file else spec.kind
    if kind != "word":
        raise NmtkitError(f"--ape-edits: the target is edit operations ({KEEP}, {DELETE}, words), which need a word "
                          "vocabulary: use --vocab word:N (or a word list as --tgt-vocab), not SentencePiece",
                          exit_code=2)


def check_image_source(images: SourceImages, suffixes: Mapping[str, str]) -> None:
    """``--src-images``: a suffix of its own, and no text stream already named ``image``."""
    if images.suffix in suffixes.values() or IMAGE in suffixes:
        raise NmtkitError(f"--src-images {images.suffix!r}: give the image lists a suffix of their own, beside text "
                          f"streams not named {IMAGE!r} (text: {', '.join(f'{k}={v}' for k, v in suffixes.items())})",
                          exit_code=2)


def line_images(image_list: Path, folder: Optional[PathLike]) -> list[Path]:
    """The image of every line of a list that is line-aligned with text (a name under ``folder``, or absolute)."""
    return image_paths([line.strip() for line in iter_lines(image_list)], folder)


def line_features(made: SplitFeatures, split: str, image_list: Optional[Path], folder: Optional[PathLike],
                  skip_bad: bool) -> Iterator[Optional[np.ndarray]]:
    """Every line's features (None: a bad image skipped, with ``skip_bad``): the rows given for the split, or else
    the CNN's on the image a line of ``image_list`` names, made once for consecutive lines naming the same image,
    which then share the array (stored once in a shard). Messages about an image name its ``list:line``."""
    if image_list is None:
        return made.of(split, [])
    runs = [(path, [line for line, _ in group])
            for path, group in itertools.groupby(enumerate(line_images(image_list, folder), 1), key=lambda x: x[1])]
    found = made.of(split, [path for path, _ in runs], skip_bad, [f"{image_list}:{lines[0]}" for _, lines in runs])
    return itertools.chain.from_iterable(itertools.repeat(feats, len(lines)) for (_, lines), feats in zip(runs, found))


def kept_whole(found: Iterable[Optional[np.ndarray]], split: str) -> Iterator[Optional[np.ndarray]]:
    """A held-out split's features, whose bad image stops preprocessing even with ``--skip-bad-images``, saying why."""
    try:
        yield from found
    except NmtkitError as e:
        raise NmtkitError(f"{e} (--skip-bad-images drops training examples only: the lines of {split} stay aligned "
                          "with its references)") from None


def write_targets(form: OutputForm, inputs: Mapping[str, Path], reference: Path, out: Path) -> Path:
    """Write to ``out``, line by line, the target sequence of each line of ``reference`` in the output ``form``,
    given the same line of the ``inputs`` files it reads. A reference the form cannot express is an error naming
    ``reference:line``."""
    streams = list(form.reads)
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for lineno, (ref, *fields) in enumerate(zip(iter_lines(reference), *(iter_lines(inputs[s]) for s in streams)), 1):
            try:
                f.write(form.target(ref, dict(zip(streams, fields))) + "\n")
            except ValueError as e:
                raise NmtkitError(f"{reference}:{lineno}: {e}") from None
    return out


def save_token_stream(folder: Path, stream: str, vocab: Vocab, lang: str) -> dict:
    """Save a text stream's vocabulary into the corpus folder; its entry of the manifest's ``streams``."""
    name = vocab_filename(vocab, stream)
    vocab.save(folder / name)
    return {"kind": TOKENS, "lang": lang, "vocab": name, "size": len(vocab), "vocab_kind": vocab.kind}


def write_manifest(folder: Path, manifest: dict) -> None:
    """Write ``manifest.json`` into the corpus folder, with the size and SHA-256 of every other file."""
    manifest["files"] = {f.name: file_record(f) for f in sorted(folder.iterdir())}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build_vocabs(spec: VocabSpec, train: Mapping[str, Path]) -> dict[str, Vocab]:
    """Load or build a vocabulary for every text stream (``train``: stream -> its training file);
    a joint vocabulary is one object shared by all of them."""
    sources = [name for name in train if name != TARGET]
    if spec.src_file or spec.tgt_file:
        if not spec.tgt_file or (sources and not spec.src_file):
            raise NmtkitError("--src-vocab and --tgt-vocab go together (give the same file twice for a joint vocabulary)",
                              exit_code=2)
        loaded: dict[str, Vocab] = {}
        if sources:  # captioning corpora have none
            assert spec.src_file is not None  # checked above
            src = load_vocab(spec.src_file)
            loaded = {name: src for name in sources}
        return {**loaded, TARGET: load_vocab(spec.tgt_file)}
    joint = spec.joint if spec.joint is not None else spec.kind.startswith("spm")
    groups = [list(train)] if joint else [[name] for name in train]
    vocabs: dict[str, Vocab] = {}
    for group in groups:
        files = [train[name] for name in group]
        if spec.kind.startswith("spm"):
            model_type = "bpe" if spec.kind == "spm-bpe" else "unigram"
            log(f"training SentencePiece {model_type} vocabulary of {spec.size} for {', '.join(group)}")
            vocab: Vocab = SentencePieceVocab.train(files, spec.size, model_type, spec.character_coverage,
                                                    spec.sample)
        else:
            vocab = WordVocab.build(itertools.chain.from_iterable(iter_lines(f) for f in files), spec.size)
        if len(vocab) < FAR_SMALLER * spec.size:
            warn(f"the vocabulary of {', '.join(group)} has {len(vocab):,} entries, far fewer than the "
                f"{spec.size:,} asked by --vocab {spec.kind}:{spec.size} (the training text has too few distinct "
                f"{'words' if spec.kind == 'word' else 'pieces'})")
        vocabs.update({name: vocab for name in group})
    return vocabs


def feature_rows(features: Mapping[str, Iterable[Optional[np.ndarray]]]) -> Iterator[dict]:
    """Line by line, each feature stream's item (an empty mapping every line if there are none)."""
    if not features:
        return itertools.repeat({})
    return (dict(zip(features, items)) for items in zip(*features.values()))


def _encode_split(name: str, files: Mapping[str, Path], n: int, vocabs: Mapping[str, Vocab], folder: Path,
                  max_len: Optional[int], shard_size: int,
                  features: Optional[Mapping[str, Iterable[Optional[np.ndarray]]]] = None) -> dict:
    """Stream one split's parallel files (stream -> file) and the items of its feature streams (stream -> one per
    line, None for a bad image) into shards; training splits drop examples with an empty or over-long text stream or
    a bad image (counted)."""
    features = features or {}
    writer = ShardWriter(folder, name, [*files, *features], shard_size)
    dropped = {"too_long": 0, "empty": 0, **({"bad_images": 0} if features else {})}
    filtering = name == "train"
    with progress() as bar, ExitStack() as stack:
        handles = [stack.enter_context(open(path, "rb")) for path in files.values()]
        task = bar.add_task(f"encoding {name}", total=n, info="")
        for lineno, (raws, items) in enumerate(zip(zip(*handles), feature_rows(features)), 1):
            ids = {stream: vocabs[stream].encode(decode_line(strip_newline(raw), str(files[stream]), lineno))
                   for stream, raw in zip(files, raws)}
            if any(item is None for item in items.values()):
                dropped["bad_images"] += 1
            elif filtering and not all(ids.values()):
                dropped["empty"] += 1
            elif filtering and max_len and any(len(x) > max_len for x in ids.values()):
                dropped["too_long"] += 1
            else:
                writer.add(**ids, **items)
            if lineno % 1000 == 0:
                bar.update(task, completed=lineno)
    shards = writer.close()
    kept = sum(s["sentences"] for s in shards)
    reasons = {"too_long": f"longer than {max_len} tokens", "empty": "with an empty stream", "bad_images": "with a bad image"}
    counted = [f"{k} {reasons[why]}" for why, k in dropped.items() if why != "too_long" or max_len]
    if kept == 0:
        raise NmtkitError(f"{next(iter(files.values()))}: no example left of {n} (dropped {', '.join(counted)})")
    log(f"{name}: {kept} examples in {len(shards)} shard(s)" + ("; dropped " + ", ".join(counted) if filtering else ""))
    info = {"shards": shards, "sentences": kept, "lines": n}
    if filtering:
        info["dropped"] = dropped
    return info


def preprocess(out: PathLike, src_lang: Union[str, Sequence[str]], tgt_lang: str, train: PathLike, valid: PathLike,
               test: Optional[PathLike] = None, vocab: Optional[VocabSpec] = None, max_len: Optional[int] = 50,
               shard_size: int = 100_000, overwrite: bool = False, ape_edits: Optional[str] = None,
               images: Optional[SourceImages] = None) -> Path:
    """Build a corpus folder from parallel text files ``PREFIX.SRC`` (one per source stream: ``src_lang``
    is a suffix or a list of ``--src`` values, see :func:`source_streams`) and ``PREFIX.TGT``.

    With ``ape_edits`` (a source stream, the MT output), the target is encoded as the edit operations turning
    that stream into it (:mod:`nmtkit.data.edits`); the held-out references stay the target text.

    With ``images``, an image list per split (or features given) beside the text adds the feature stream ``image``
    (multimodal translation); held-out splits keep the list, with absolute paths, among their inputs.

    The folder is assembled under a temporary name and renamed at the end, so a failure
    leaves no half-written corpus behind.
    """
    out = Path(out)
    vocab = vocab or VocabSpec()
    check_output_folder(out, CORPUS, overwrite, "-o", "--overwrite")
    splits = {"train": train, "valid": valid}
    if test:
        splits["test"] = test
    sources = source_streams(src_lang)
    if ape_edits:
        check_ape_edits(ape_edits, list(sources), vocab)
    suffixes = {**sources, TARGET: tgt_lang}
    files = {split: {stream: Path(f"{prefix}.{suffix}") for stream, suffix in suffixes.items()}
             for split, prefix in splits.items()}
    lists: dict[str, Path] = {}
    if images:
        check_image_source(images, suffixes)
        lists = images.lists(splits)
    counts = {split: check_parallel(*paths.values(), *([lists[split]] if split in lists else []))
              for split, paths in files.items()}
    part = _MultimodalPart(images, SplitFeatures(images.spec, images.features, counts, "lines"), lists) if images else None

    inputs = [*(f for paths in files.values() for f in paths.values()), *lists.values(), vocab.src_file, vocab.tgt_file]
    if images:
        inputs += [*images.features.values(), images.folder, images.spec.weights]
    with corpus_folder(out, overwrite, [f for f in inputs if f]) as tmp:
        _write_corpus(tmp, files, counts, suffixes, vocab, max_len, shard_size, ape_edits, part)
    return out


@dataclass
class _MultimodalPart:
    """The image side of a multimodal corpus being written: where it comes from, its features, its lists."""

    source: SourceImages
    made: SplitFeatures
    lists: Mapping[str, Path]

    def features(self, split: str) -> dict[str, Iterable[Optional[np.ndarray]]]:
        """The split's feature stream, line by line; training lines with a bad image are None with
        ``--skip-bad-images``, other splits stop at one."""
        skip = self.source.spec.skip_bad
        found = line_features(self.made, split, self.lists.get(split), self.source.folder, skip and split == "train")
        return {IMAGE: kept_whole(found, split) if skip and split != "train" else found}

    def write_inputs(self, tmp: Path, split: str) -> dict[str, str]:
        """Copy a held-out split's image list into ``tmp`` with absolute paths; its entry of the split's inputs
        (none if the split's features were given)."""
        if split not in self.lists:
            return {}
        name = f"{split}.{self.source.suffix}"
        with atomic_output(tmp / name, "w") as f:
            f.writelines(f"{path.resolve()}\n" for path in line_images(self.lists[split], self.source.folder))
        return {IMAGE: name}


def _form_targets(tmp: Path, files: Mapping[str, Mapping[str, Path]], form: OutputForm) -> dict[str, dict[str, Path]]:
    """``files`` with every split's target replaced by its target sequences in the output ``form`` (unless text),
    written into the folder ``TARGETS_FOLDER`` of ``tmp``."""
    if not form.reads:
        return {split: dict(paths) for split, paths in files.items()}
    folder = tmp / TARGETS_FOLDER
    folder.mkdir()
    return {split: {**paths, TARGET: write_targets(form, paths, paths[TARGET], folder / split)}
            for split, paths in files.items()}


def _write_corpus(tmp: Path, files: Mapping[str, Mapping[str, Path]], counts: Mapping[str, int],
                  suffixes: Mapping[str, str], vocab: VocabSpec, max_len: Optional[int], shard_size: int,
                  ape_edits: Optional[str], images: Optional[_MultimodalPart] = None) -> None:
    """Vocabularies, shards, held-out text (and image lists) and the manifest, into the folder ``tmp``."""
    form = OutputForm(ape_edits)
    encoded = _form_targets(tmp, files, form)
    vocabs = build_vocabs(vocab, encoded["train"])
    streams = {stream: save_token_stream(tmp, stream, v, suffixes[stream]) for stream, v in vocabs.items()
               if stream != TARGET}
    if images:  # after the text inputs: a model's encoders follow this order
        streams[IMAGE] = images.made.stream(images.source.suffix)
    streams[TARGET] = save_token_stream(tmp, TARGET, vocabs[TARGET], suffixes[TARGET])
    manifest: dict = {
        "format": FORMAT_VERSION, "streams": streams,
        "options": {"max_len": max_len, "shard_size": shard_size,
                    "vocab": f"{vocab.kind}:{vocab.size}" if not vocab.src_file else str(vocab.src_file),
                    **form.record(), **(images.made.record() if images else {})},
        "splits": {},
    }
    for name, paths in files.items():
        info = _encode_split(name, encoded[name], counts[name], vocabs, tmp, max_len, shard_size,
                             images.features(name) if images else None)
        if name != "train":  # held-out text kept raw: the reference for BLEU, the inputs to translate
            raw = {stream: f"{name}.{suffixes[stream]}" for stream in paths}
            for stream, file in raw.items():
                shutil.copyfile(paths[stream], tmp / file)
            info["reference"] = raw.pop(TARGET)
            info["inputs"] = {**raw, **(images.write_inputs(tmp, name) if images else {})}
        manifest["splits"][name] = info
    if form.reads:
        shutil.rmtree(tmp / TARGETS_FOLDER)
    write_manifest(tmp, manifest)

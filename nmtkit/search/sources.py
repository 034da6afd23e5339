"""What one input line becomes for the search: token ids of a text line (``translate``) or the CNN features of
the image a line names (``caption``). An empty text line gives no ids and an unusable line None (each an empty
output line); an unusable line also gets a warning naming it, and its number in ``invalid`` (or, from a ``strict``
source, as ``score`` reads, a one-line error).

A model may read several inputs (``model.inputs``: ``src`` and ``mt`` for post-editing, ``src`` and ``image`` for
multimodal translation): :class:`StreamSources` reads each line's fields, one per input, each with that stream's
own source, into ``{stream: item}``; one-input lines go through it as one field.

Image inputs are read in two steps, so that the CNN sees a batch of images rather than one: ``read`` loads a line's
image, and ``finish``, once a chunk of lines is read, turns the chunk's images into features (see
:meth:`StreamSources.finish`; sources without a ``finish`` give their items ready)."""
from __future__ import annotations

import math
from typing import Mapping, Optional, Protocol, Sequence, Union

import numpy as np
import torch

from nmtkit.data.images import ImageSpec, finite_row
from nmtkit.data.streams import TOKENS
from nmtkit.data.text import lone_carriage_returns, strip_newline, without_bom
from nmtkit.data.vocab import UNK, Vocab
from nmtkit.errors import NmtkitError
from nmtkit.progress import warn_line

Item = Union[list[int], np.ndarray]
Inputs = dict[str, Item]  #: one line's inputs by stream
Line = Union[bytes, Sequence[bytes]]  #: one input line: its bytes (one input), or one field per input


class Source(Protocol):
    name: str  #: what its messages call it (``--prefix-file p.txt``, an input's path)
    stream: str  #: the input stream the model reads
    reads_field: bool  #: whether it reads a field of each line (a feature file's rows do not)
    problem: str  #: what was wrong with the lines in ``invalid``, for the final error
    invalid: list[int]  #: numbers (from 1) of the lines that gave None
    strict: bool  #: whether a line it cannot use whole is an error (perplexity is of whole inputs)

    def read(self, index: int, raw: bytes) -> Optional[Item]:
        """Line ``index`` (from 0) as the model's input, or None."""

    def labels(self, item: Item) -> list[str]:
        """Names of the positions the model attends to, for attention files."""

    # optional: ``finish(items) -> items``, what the items ``read`` gave become for the model (the features of
    # loaded images), and ``chunk_size``, how many lines a chunk may hold while they wait for it


def unusable(strict: bool, noted: list[int], index: int, message: str) -> None:
    """Line ``index`` (from 0) cannot be used, for the reason ``message`` (naming the file and line): if ``strict``,
    a one-line error; else a warning (the command writes an empty line for it) and the line's number in ``noted``."""
    if strict:
        raise NmtkitError(message)
    name, named, _ = message.partition(f":{index + 1}: ")  # (the file: the message names it and the line)
    warn_line(len(noted), f"{message}; writing an empty line", f"{name if named else message.split(':')[0]}: unusable "
              "lines")
    noted.append(index + 1)


def grid_labels(count: int) -> list[str]:
    """Names of the cells of a square feature grid, row by row: ``r0c0``, ``r0c1``, ... (14 x 14 for VGG16 at
    224 px); ``f0``, ``f1``, ... for features that do not form a square."""
    side = math.isqrt(count)
    if side * side != count:
        return [f"f{i}" for i in range(count)]
    return [f"r{i}c{j}" for i in range(side) for j in range(side)]


def line_text(index: int, raw: bytes) -> str:
    """Line ``index`` (from 0) as text: without its newline and a byte-order mark opening it; raises
    UnicodeDecodeError."""
    return without_bom(strip_newline(raw)).decode("utf-8")


def reading_limit(model, max_input_len: Optional[int]) -> tuple[Optional[int], str]:
    """How many tokens of a text input to read (None: all) and what sets that: ``max_input_len``
    (``--max-input-len``), or the model's :meth:`~nmtkit.models.seq2seq.Seq2Seq.input_limit` where less."""
    limit = model.input_limit()
    if limit is not None and (max_input_len is None or limit < max_input_len):
        return limit, f"the most this model reads: its {limit + 1} positions"
    return max_input_len, "--max-input-len"


class TextSource:
    """Text lines to token ids; a line longer than ``max_input_len`` tokens (None: no limit) is truncated with a
    warning, or refused in one line if ``strict`` (perplexity is of whole inputs), or read whole with ``split``
    (the search cuts it into pieces, :mod:`nmtkit.search.splitting`)."""

    problem, reads_field = "of invalid UTF-8", True

    def __init__(self, vocab: Vocab, max_input_len: Optional[int] = 250, name: str = "<stdin>", stream: str = "src",
                 limited_by: str = "--max-input-len", strict: bool = False, split: bool = False):
        self.vocab, self.max_input_len, self.name, self.stream = vocab, max_input_len, name, stream
        self.limited_by, self.strict, self.split = limited_by, strict, split  # (limited_by: for messages)
        self.invalid: list[int] = []
        self.truncated = 0
        self.tokens = self.unknown = 0  #: tokens read, and how many of them the vocabulary lacks
        self.lines = self.carriage_returns = 0  #: lines read, and carriage returns within them (not ending them)

    def warnings(self, inputs: Sequence[str]) -> list[str]:
        """Once every line is read: a warning where most tokens (over half of at least 20) were ``<unk>``, as when
        a model reads text of another language, or a model of several ``inputs`` (its order) reads them swapped; and
        where the lines hold more carriage returns than there are lines (old Mac line endings: one line read)."""
        said = []
        if self.tokens >= 20 and 2 * self.unknown > self.tokens:
            order = f" (a model of several inputs reads them in its order: {', '.join(inputs)})" if len(inputs) > 1 else ""
            said.append(f"{self.name}: {100 * self.unknown // self.tokens}% of its {self.tokens} tokens are <unk> in "
                        f"the model's {self.stream} vocabulary: is it the text the model reads as {self.stream}?{order}")
        if self.carriage_returns > self.lines:
            said.append(lone_carriage_returns(self.name, self.carriage_returns, self.lines))
        return said

    def read(self, index: int, raw: bytes) -> Optional[list[int]]:
        try:
            text = line_text(index, raw)
        except UnicodeDecodeError as e:
            unusable(self.strict, self.invalid, index,
                     f"{self.name}:{index + 1}: invalid UTF-8 (byte {e.start + 1} of the line)")
            return None
        self.lines += 1
        self.carriage_returns += text.count("\r")
        if not text.strip():
            return []
        ids = self.vocab.encode(text)
        if self.max_input_len is not None and len(ids) > self.max_input_len and not self.split:
            if self.strict:
                raise NmtkitError(f"{self.name}:{index + 1}: {len(ids)} tokens, more than {self.max_input_len} "
                                  f"({self.limited_by})")
            warn_line(self.truncated, f"{self.name}:{index + 1}: {len(ids)} tokens, truncated to {self.max_input_len} "
                      f"({self.limited_by})", f"{self.name}: lines cut at {self.max_input_len} tokens")
            self.truncated += 1
            ids = ids[:self.max_input_len]
        self.tokens += len(ids)
        self.unknown += ids.count(UNK)
        return ids

    def labels(self, item: Item) -> list[str]:
        return self.vocab.id_to_token(list(item)) + ["</s>"]


class ImageSource:
    """Lines naming image files to their features through ``cnn`` (the features the model was trained on):
    ``read`` loads the image, ``finish`` runs the CNN over a chunk's images, ``batch_size`` at a time."""

    problem, reads_field = "naming an unreadable image", True
    chunk_size = 256  # lines a chunk may hold: their images wait for the CNN in memory (0.6 MB each at 224 px)

    def __init__(self, cnn: torch.nn.Module, size: int, name: str = "<stdin>", stream: str = "image",
                 batch_size: int = 16, strict: bool = False):
        self.cnn, self.size, self.name, self.stream, self.batch_size = cnn, size, name, stream, batch_size
        self.strict = strict
        self.invalid: list[int] = []

    def read(self, index: int, raw: bytes) -> Optional[np.ndarray]:
        """The image line ``index`` names, resized and normalised ``[3, size, size]`` (an empty array for an empty
        line), or None."""
        from nmtkit.data.images import load_image

        try:
            path = line_text(index, raw).strip()
            if not path:
                return np.zeros(0, np.float32)  # (nothing to caption: an empty output, as for an empty text line)
            image = load_image(path, self.size)
        except (UnicodeDecodeError, NmtkitError) as e:
            problem = "not a UTF-8 file name" if isinstance(e, UnicodeDecodeError) else e
            unusable(self.strict, self.invalid, index, f"{self.name}:{index + 1}: {problem}")
            return None
        return image.numpy()

    def finish(self, images: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The features ``[grid, D]`` of images that :meth:`read` loaded (none given empty)."""
        features: list[np.ndarray] = []
        with torch.inference_mode():
            device = next(self.cnn.parameters()).device
            for start in range(0, len(images), self.batch_size):
                batch = torch.from_numpy(np.stack(images[start:start + self.batch_size])).to(device)
                features.extend(self.cnn(batch).float().cpu().numpy())
        return features

    def labels(self, item: Item) -> list[str]:
        return grid_labels(len(item))


class FeatureSource:
    """Rows of a precomputed feature array ``[images, grid, D]`` (``caption --features``, ``translate --features``,
    ``score --src``): line i is row i, whatever the line holds (it reads no field of it); a line past the last row has
    none. ``name`` is the option and file that gave them, for messages."""

    problem, reads_field = "without features", False

    def __init__(self, features: np.ndarray, stream: str = "image", name: str = "--features", strict: bool = False):
        self.features, self.stream, self.name, self.strict = features, stream, name, strict
        self.invalid: list[int] = []
        self.rows_read = 0  #: the rows up to the last one read

    def check_all_read(self) -> None:
        """Once every line is read: a one-line error (exit code 1) if rows were left over, which says that the
        rows and the lines may not be of the same images (an input read as it came, whose lines were not counted)."""
        first, last = self.rows_read + 1, len(self.features)
        if first <= last:
            unread = f"row {last}" if first == last else f"rows {first}-{last}"
            raise NmtkitError(f"{self.name}: {last} rows, but the input had {self.rows_read} line(s): {unread} left "
                              "unread (are they of the same images?)")

    def lines(self) -> list[bytes]:
        """One (empty) line per row, for the decoding loop."""
        return [b""] * len(self.features)

    def read(self, index: int, raw: bytes) -> Optional[np.ndarray]:
        self.rows_read = max(self.rows_read, index + 1)
        if index >= len(self.features):
            unusable(self.strict, self.invalid, index, f"{self.name}: no row {index + 1} for input line {index + 1} "
                     f"(it has {len(self.features)})")
            return None
        return finite_row(np.asarray(self.features[index], dtype=np.float32), self.name, index)

    def labels(self, item: Item) -> list[str]:
        return grid_labels(len(item))


def fields_of(line: Line) -> tuple[bytes, ...]:
    """A line's fields, one per input: the bytes of a one-input line are its one field; a TypeError for a line of
    text (``Decoder.lines`` and ``translate_texts`` take text)."""
    if isinstance(line, bytes):
        return (line,)
    fields = tuple(line)
    if isinstance(line, str) or not all(isinstance(field, bytes) for field in fields):
        raise TypeError(f"a line to decode is its bytes, or one bytes field per input; got {type(line).__name__}"
                        + ("" if isinstance(line, str) else f" of {', '.join(type(f).__name__ for f in fields)}")
                        + " (Decoder.lines and Decoder.translate_texts take text)")
    return fields


class StreamSources:
    """The sources of a model's inputs, in its order: line ``i`` holds one field per input (TAB-separated fields of
    one line, or the lines ``i`` of several files), each read by its stream's source, giving ``{stream: item}``.

    A line whose inputs are not all usable gives None: with the wrong number of fields (a warning naming the line,
    and its number in ``invalid``), or an input its source cannot use (counted there). An empty input (text, or an
    image path) is empty, and so is each input of an empty line: ``translate`` writes an empty line for it.
    """

    def __init__(self, sources: Sequence[Source], name: str = "<stdin>"):
        self.sources, self.name = {source.stream: source for source in sources}, name
        self.strict = any(source.strict for source in sources)  # (they are all strict, or none)
        self.wrong_fields: list[int] = []  #: numbers (from 1) of the lines with the wrong number of fields

    @property
    def invalid(self) -> list[int]:
        """The lines that gave None, whatever was wrong with them."""
        return sorted({n for s in self.sources.values() for n in s.invalid} | set(self.wrong_fields))

    @property
    def problem(self) -> str:
        """What was wrong with the lines in ``invalid``."""
        problems = [s.problem for s in self.sources.values() if s.invalid]
        problems += ["with the wrong number of fields"] if self.wrong_fields else []
        return " or ".join(dict.fromkeys(problems))

    @property
    def truncated(self) -> int:
        """How many inputs its text sources have truncated so far."""
        return sum(getattr(source, "truncated", 0) for source in self.sources.values())

    @property
    def fields(self) -> list[str]:
        """The inputs that each line holds a field for, in order (all but those read from feature files)."""
        return [stream for stream, source in self.sources.items() if source.reads_field]

    def read(self, index: int, line: Line) -> Optional[Inputs]:
        """Line ``index`` (from 0) as the model's inputs, or None."""
        fields, expected = fields_of(line), self.fields
        if len(fields) != len(expected) and not any(strip_newline(field).strip() for field in fields):
            fields = (b"",) * len(expected)  # (a blank line, TABs or not: empty inputs)
        if expected and len(fields) != len(expected):  # (inputs all from feature rows: lines only count)
            unusable(self.strict, self.wrong_fields, index, f"{self.name}:{index + 1}: {len(fields)} TAB-separated "
                     f"field(s), expected {len(expected)} ({', '.join(expected)})")
            return None
        given = iter(fields)
        items = [(stream, source.read(index, next(given) if source.reads_field else b""))
                 for stream, source in self.sources.items()]
        usable = {stream: item for stream, item in items if item is not None}
        return usable if len(usable) == len(items) else None

    def labels(self, inputs: Inputs) -> dict[str, list[str]]:
        """The names of each input's positions, by stream (see :meth:`Source.labels`)."""
        return {stream: self.sources[stream].labels(item) for stream, item in inputs.items()}

    @property
    def chunk_size(self) -> Optional[int]:
        """How many lines a chunk may hold while their items wait for :meth:`finish` (None: any number)."""
        sizes = [size for source in self.sources.values() if (size := getattr(source, "chunk_size", None))]
        return min(sizes) if sizes else None

    def finish(self, chunk: Sequence[Optional[Inputs]]) -> None:
        """Make the items that :meth:`read` gave a chunk of lines what the model reads, in place: each stream's
        source finishes all of the chunk's items at once (a batch of images through the CNN)."""
        read = [inputs for inputs in chunk if inputs is not None]
        for stream, source in self.sources.items():
            given = [inputs for inputs in read if len(inputs[stream])]  # (an empty input stays empty)
            if hasattr(source, "finish") and given:
                finished = source.finish([inputs[stream] for inputs in given])
                if len(finished) != len(given):
                    raise RuntimeError(f"{type(source).__name__}.finish gave {len(finished)} items for {len(given)}")
                for inputs, item in zip(given, finished):
                    inputs[stream] = item


def sort_length(inputs: Mapping[str, Item]) -> int:
    """How long an example's inputs are, for sorting by length: its longest text input (that of any input when
    none is text, e.g. an image's feature grid)."""
    text = [len(item) for item in inputs.values() if np.ndim(item) == 1]
    return max(text) if text else max(len(item) for item in inputs.values())


def stack_inputs(examples: Sequence[Mapping[str, Item]]) -> dict[str, list[Item]]:
    """The inputs of several examples by stream, for :func:`~nmtkit.data.batching.make_batch`."""
    return {stream: [x[stream] for x in examples] for stream in examples[0]} if examples else {}


def check_input_count(loaded, count: int, option: str, alternative: str = "", features: bool = False) -> None:
    """One ``option`` FILE per model input (per text input with ``features``, the feature input's rows being given):
    ``count`` of them, else a one-line error naming the inputs (``alternative``: another way to give them)."""
    inputs = read_inputs(loaded, features)
    if count and not inputs:
        raise NmtkitError(f"{option}: this {loaded.config['arch']} model reads {', '.join(loaded.model.inputs)} alone, "
                          f"from the features file; give no other {option} (got {count})", exit_code=2)
    if count != len(inputs):
        raise NmtkitError(f"{option}: this {loaded.config['arch']} model reads {len(inputs)} input(s), "
                          f"{', '.join(inputs)}: give one {option} FILE for each, in this order{alternative} "
                          f"(got {count})", exit_code=2)


def feature_inputs(loaded) -> list[str]:
    """The model's inputs that are not text: image features (made from image paths, or given precomputed)."""
    return [stream for stream in loaded.model.inputs if loaded.meta.streams[stream].kind != TOKENS]


def read_inputs(loaded, features: bool = False) -> list[str]:
    """The model's inputs that lines hold: all, or its text inputs only when ``features`` gives its feature input."""
    inputs = list(loaded.model.inputs)
    if not features:
        return inputs
    given = feature_inputs(loaded)
    if len(given) != 1:
        raise NmtkitError(f"--features: this {loaded.config['arch']} model reads {len(given)} feature inputs "
                          f"({', '.join(given) or 'none'}); --features gives one", exit_code=2)
    return [stream for stream in inputs if stream not in given]


def model_sources(loaded, model_path: str, names: Sequence[str], max_input_len: Optional[int] = 250,
                  cnn_weights: Optional[str] = None, features: Optional[FeatureSource] = None,
                  strict: bool = False, split: bool = False) -> StreamSources:
    """The sources of a loaded model's inputs, in order: text streams to ids with their vocabularies (truncated
    beyond :func:`reading_limit`), feature streams made from image paths as its training corpus made them, or the rows
    of ``features``; the ``k``-th input that lines hold is read from ``names[k]``. If ``strict``, a line that cannot
    be read whole (too long, invalid UTF-8, an unreadable image) is a one-line error (perplexity is of whole
    inputs)."""
    kinds = {stream: info.kind for stream, info in loaded.meta.streams.items()}
    named = dict(zip(read_inputs(loaded, features is not None), names))
    length, limited_by = reading_limit(loaded.model, max_input_len)
    sources: list[Source] = [
        TextSource(loaded.vocabs[stream], length, named[stream], stream, limited_by, strict, split)
        if kinds[stream] == TOKENS
        else made_features(loaded, model_path, cnn_weights, named[stream], stream, strict) if features is None
        else FeatureSource(features.features, stream, features.name, strict)
        for stream in loaded.model.inputs]
    if features is not None:
        check_features(loaded, features.stream, features.features, features.name)
    return StreamSources(sources, " + ".join(dict.fromkeys(names)) or (features.name if features else "<stdin>"))


def check_captioner(loaded, model_path: str) -> None:
    """A model that reads images alone (a captioning model), else a one-line error naming ``model_path``."""
    if loaded.model.inputs != ("image",):
        raise NmtkitError(f"{model_path}: a {loaded.config['arch']} model reads {', '.join(loaded.model.inputs)}, "
                          "not images; use 'nmtkit translate'", exit_code=2)


def check_translator(loaded, model_path: str) -> None:
    """A model that reads more than images (a translation model), else a one-line error naming ``model_path``."""
    if loaded.model.inputs == ("image",):
        raise NmtkitError(f"{model_path}: a {loaded.config['arch']} model reads images alone (a captioning model); "
                          "use 'nmtkit caption'", exit_code=2)


def check_features(loaded, stream: str, features: np.ndarray, name: str) -> None:
    """Precomputed ``features [images, grid, D]`` for a loaded model's input ``stream``: D must be the size the model
    was trained on, and the grid that of the CNN its corpus made features with (if it made them), else a one-line
    error naming ``name`` (the option and file), the shape and the model's."""
    size = loaded.meta.streams[stream].size
    grid = ImageSpec(size=int(loaded.images["size"])).grid if loaded.images else None
    if features.shape[2] != size or grid not in (None, features.shape[1]):
        raise NmtkitError(f"{name}: features of shape {tuple(features.shape)}, but this {loaded.config['arch']} model "
                          f"reads [images, {grid or 'grid'}, {size}]", exit_code=2)


def image_source(loaded, model_path: str, cnn_weights: Optional[str] = None, name: str = "<stdin>") -> ImageSource:
    """The :class:`ImageSource` of a loaded captioning model (see :func:`made_features`)."""
    check_captioner(loaded, model_path)
    return made_features(loaded, model_path, cnn_weights, name, "image")


def made_features(loaded, model_path: str, cnn_weights: Optional[str], name: str, stream: str,
                  strict: bool = False) -> ImageSource:
    """The :class:`ImageSource` of a loaded model's feature stream: features made as its training corpus made them
    (the record its checkpoint carries; ``cnn_weights`` if the weights file has moved)."""
    if not loaded.images:
        raise NmtkitError(f"{model_path}: its corpus had precomputed features, so nmtkit cannot make them from images",
                          exit_code=2)
    spec = ImageSpec.from_record(loaded.images, cnn_weights)
    device = next(loaded.model.parameters()).device
    # batches keep a GPU busy; two CPU threads run one image as fast as 16, in less memory (bench/README.md)
    return ImageSource(spec.network().to(device), spec.size, name, stream, 1 if device.type == "cpu" else 16, strict)

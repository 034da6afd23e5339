"""Translate stdin with a CTranslate2 model folder as `nmtkit translate` does: sentences sorted by length into
batches of 32, 2 threads, the same length limit (1.5·|x| + 10 of the batch's longest), SentencePiece in and out,
output in input order. Prints the decoding time (model loading excluded) to stderr, as `nmtkit translate` does.
Usage: ct2_translate.py MODEL_DIR SPM_MODEL BEAM"""
import sys
import time

import ctranslate2
import sentencepiece as spm

model, sp_path, beam = sys.argv[1], sys.argv[2], int(sys.argv[3])
sp = spm.SentencePieceProcessor(model_file=sp_path)
translator = ctranslate2.Translator(model, device="cpu", inter_threads=1, intra_threads=2)
start = time.perf_counter()
lines = sys.stdin.read().splitlines()
pieces = [sp.encode(line, out_type=str) for line in lines]
order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
out = [""] * len(pieces)
for k in range(0, len(order), 32):
    batch = order[k:k + 32]
    limit = int(1.5 * max(len(pieces[i]) for i in batch)) + 10
    results = translator.translate_batch([pieces[i] for i in batch], beam_size=beam, max_batch_size=32,
                                         max_decoding_length=limit, length_penalty=1.0)
    for i, r in zip(batch, results):
        out[i] = sp.decode(r.hypotheses[0])
sys.stdout.write("".join(line + "\n" for line in out))
seconds = time.perf_counter() - start
print(f"translated {len(lines)} lines in {seconds:.1f} s ({len(lines) / seconds:.1f} lines/s, model loading excluded)",
      file=sys.stderr)

"""Translate stdin with a CTranslate2 model folder as `nmtkit translate` does: batch 32, 2 threads, the same
length limit (1.5·|x| + 10), SentencePiece in and out. Usage: ct2_translate.py MODEL_DIR SPM_MODEL BEAM"""
import sys

import ctranslate2
import sentencepiece as spm

model, sp_path, beam = sys.argv[1], sys.argv[2], int(sys.argv[3])
sp = spm.SentencePieceProcessor(model_file=sp_path)
lines = sys.stdin.read().splitlines()
pieces = [sp.encode(line, out_type=str) for line in lines]
translator = ctranslate2.Translator(model, device="cpu", inter_threads=1, intra_threads=2)
out = []
for k in range(0, len(pieces), 32):
    batch = pieces[k:k + 32]
    limit = int(1.5 * max(len(p) for p in batch)) + 10
    results = translator.translate_batch(batch, beam_size=beam, max_batch_size=32, max_decoding_length=limit,
                                         length_penalty=1.0)
    out += [sp.decode(r.hypotheses[0]) for r in results]
sys.stdout.write("".join(line + "\n" for line in out))

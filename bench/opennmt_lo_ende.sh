#!/usr/bin/env bash
# OpenNMT-py 3.5.1 on LibreOffice en-de, set up as ../shared/bench/PEERS.md measured it, beside nmtkit's
# bench/rnnsearch_lo_ende.sh (same data, model and decoding settings; output lines in the same format).
# Usage: bench/opennmt_lo_ende.sh [setup|train|decode|all]   (default: all)
#   setup:  create the virtual environment VENV (default bench/runs/onmt-venv) on top of the system torch, if missing;
#           OpenNMT-py is installed with --no-deps and its other dependencies with torch pinned to the system's
#   train:  STEPS updates (default 2200) of the PEERS.md model (embeddings 256, BiGRU encoder 256 per direction,
#           GRU decoder 512, MLP attention, input feeding, dropout 0.2, Adam 1e-3, batch 64 sentences, clip 1.0,
#           loss normalised by tokens), THREADS threads (default 2), seed SEED (default 1), no validation; the
#           final checkpoint is RUNS/onmt/last.pt, the log RUNS/onmt/train.log; prints parameters, tok/s, memory
#   decode: translate the test set greedy and with beam 5, batch 32, fp32, 2 threads, with OpenNMT's defaults
#           otherwise (length penalty avg, max length 1.25|x|+5); SentencePiece-decode and print, like nmtkit's
#           decode_test, the whole command's wall time, decoding alone (OpenNMT's -report_time), peak memory and
#           BLEU (13a, mixed case) / chrF against the raw test.de
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), VENV, STEPS, THREADS,
#   SEED, NUM_WORKERS (OpenNMT's data-loading processes, default 2 as OpenNMT), REPORT (log every N steps,
#   default 25), CKPT (checkpoint to decode, default RUNS/onmt/last.pt), LIMIT (first N test lines, default all),
#   DECODE_THREADS (default 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
venv=${VENV:-$here/runs/onmt-venv}
steps=${STEPS:-2200}
threads=${THREADS:-2}
seed=${SEED:-1}
what=${1:-all}
data=$shared/data/lo-ende
sp=$shared/bench/lo-ende-sp8k
out=$runs/onmt
mkdir -p "$runs"
source "$here/lib.sh"

if [[ $what == setup || $what == all ]]; then
  if ! "$venv/bin/onmt_train" -h > /dev/null 2>&1; then
    # --system-site-packages: reuse the system torch (CPU build). OpenNMT-py 3.5.1 pins torch < 2.3, so it is
    # installed with --no-deps and torch is pinned to the system's version for everything else.
    python -m venv --system-site-packages "$venv"
    constraints=$(mktemp)
    python -c 'import torch; print("torch==" + torch.__version__)' > "$constraints"
    "$venv/bin/pip" install --no-deps OpenNMT-py==3.5.1
    "$venv/bin/pip" install -c "$constraints" configargparse "pyonmttok>=1.37,<2" rapidfuzz pyahocorasick spacy \
      fasttext-wheel tensorboard waitress "setuptools>=77.0.3"
    rm -f "$constraints"
  fi
  # quiet unless they fail (then run again to show why)
  "$venv/bin/onmt_train" -h > /dev/null 2>&1 || "$venv/bin/onmt_train" -h
  TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 "$venv/bin/onmt_translate" -h > /dev/null 2>&1 ||
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 "$venv/bin/onmt_translate" -h
  echo "OpenNMT-py $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("OpenNMT-py"))') in $venv" \
    "(torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'))"
fi

if [[ $what == train || $what == all ]]; then
  fresh "$out"
  cat > "$out/train.yaml" <<EOF
# written by bench/opennmt_lo_ende.sh
data:
  corpus_1:
    path_src: $sp/train.sp.en
    path_tgt: $sp/train.sp.de
src_vocab: $out/vocab
tgt_vocab: $out/vocab
src_vocab_size: 8000
tgt_vocab_size: 8000
share_vocab: false
share_embeddings: false
save_model: $out/model
overwrite: true
seed: $seed
# model: rnnsearch-like, as PEERS.md
model_type: text
encoder_type: brnn
decoder_type: rnn
rnn_type: GRU
enc_layers: 1
dec_layers: 1
word_vec_size: 256
hidden_size: 512
global_attention: mlp
input_feed: 1
dropout: 0.2
# training
optim: adam
learning_rate: 0.001
max_grad_norm: 1.0
batch_type: sents
batch_size: 64
normalization: tokens
train_steps: $steps
save_checkpoint_steps: $steps
valid_steps: 1000000
report_every: ${REPORT:-25}
# the default (262,144) reads this corpus about 9 times into memory before the first step
bucket_size: 32768
num_workers: ${NUM_WORKERS:-2}
EOF
  export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
  # vocabularies: the joint SentencePiece model's pieces, as nmtkit uses them (not onmt_build_vocab's counts, which
  # keep only the pieces seen on each side). With OpenNMT's 4 specials (<unk> <blank> <s> </s>) that is 8,001 entries,
  # padded to 8,008; dropping one piece that the training data never uses gives exactly 8,000 on each side, and
  # 12,008,768 parameters as PEERS.md.
  "$venv/bin/python" - "$sp" "$out/vocab" <<'PY'
import sys
sp, vocab = sys.argv[1:]
pieces = [l.split("\t")[0] for l in open(f"{sp}/spm.vocab", encoding="utf-8").read().splitlines()]
pieces = [p for p in pieces if p not in ("<unk>", "<s>", "</s>")]
seen = {t for side in ("en", "de") for l in open(f"{sp}/train.sp.{side}", encoding="utf-8") for t in l.split()}
unused = [p for p in pieces if p not in seen]
pieces.remove(unused[-1])
open(vocab, "w", encoding="utf-8").write("".join(p + "\n" for p in pieces))
PY
  peak "$out/train.mem" "$venv/bin/onmt_train" -config "$out/train.yaml" > "$out/train.log" 2>&1 ||
    { tail -n 20 "$out/train.log" >&2; exit 1; }
  ln -sf "model_step_$steps.pt" "$out/last.pt"
  "$venv/bin/python" - "$out/train.log" "$out/train.mem" <<'EOF'
import re, statistics, sys
log = open(sys.argv[1], encoding="utf-8").read()
params = re.search(r"\* number of parameters: (\d+)", log)
windows = [(int(s), float(t)) for s, t in re.findall(r"Step (\d+)/ *\d+;.*?/ *([\d.]+) tok/s", log)]
steady = [t for s, t in windows if s > 50] or [t for _, t in windows]
mem = int(open(sys.argv[2]).read().split()[-1]) / 1e6
print(f"OpenNMT-py parameters: {int(params[1]):,}" if params else "OpenNMT-py parameters: not found in the log")
print(f"training: {len(windows)} windows, tgt tok/s min {min(steady):,.0f} / median {statistics.median(steady):,.0f}; "
      f"{windows[-1][0]} steps, peak memory {mem:.2f} GB")
EOF
fi

if [[ $what == decode || $what == all ]]; then
  ckpt=${CKPT:-$out/last.pt}
  export OMP_NUM_THREADS=${DECODE_THREADS:-2} MKL_NUM_THREADS=${DECODE_THREADS:-2}
  export TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1  # OpenNMT-py's checkpoints are pickles, refused by recent torch.load
  src=$sp/test.sp.en ref=$data/test.de
  if [ -n "${LIMIT:-}" ]; then
    head -n "$LIMIT" "$src" > "$out/test.$LIMIT.sp.en"
    head -n "$LIMIT" "$ref" > "$out/test.$LIMIT.de"
    src=$out/test.$LIMIT.sp.en ref=$out/test.$LIMIT.de
  fi
  for beam in 1 5; do
    name=$([ $beam = 1 ] && echo greedy || echo beam5).fp32
    start=$(date +%s.%N)
    peak "$out/test.$name.mem" "$venv/bin/onmt_translate" -model "$ckpt" -src "$src" -output "$out/test.$name.sp" \
      -beam_size $beam -batch_size 32 -batch_type sents -precision fp32 -gpu -1 -report_time \
      > "$out/test.$name.log" 2>&1 || { tail -n 20 "$out/test.$name.log" >&2; exit 1; }
    end=$(date +%s.%N)
    "$venv/bin/python" - "$out/test.$name.sp" "$out/test.$name.de" "$ref" "$out/test.$name.mem" "$start" "$end" \
      "$name" "$out/test.$name.log" "$sp/spm.model" <<'EOF'
import re, sys
import sacrebleu, sentencepiece
sp_out, hyp_out, ref, mem, start, end, name, log, model = sys.argv[1:]
spm = sentencepiece.SentencePieceProcessor(model_file=model)
hyps = [spm.decode_pieces(l.split()) for l in open(sp_out, encoding="utf-8").read().splitlines()]
open(hyp_out, "w", encoding="utf-8").write("".join(h + "\n" for h in hyps))
refs = open(ref, encoding="utf-8").read().splitlines()
seconds = float(end) - float(start)
# OpenNMT's own decoding time (model loading excluded); its per-sentence average has more digits than its total
decoding = re.search(r"Average translation time \(ms\): ([\d.]+)", open(log, encoding="utf-8").read())
alone = f"{1000 / float(decoding[1]):.1f}" if decoding and float(decoding[1]) > 0 else "?"
bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
chrf = sacrebleu.corpus_chrf(hyps, [refs]).score
print(f"decode {name}: {len(hyps)} sentences in {seconds:.1f} s (whole command) = {len(hyps) / seconds:.1f} sent/s, "
      f"decoding alone {alone} sent/s; peak memory {int(open(mem).read().split()[-1]) / 1e6:.2f} GB; "
      f"test BLEU {bleu:.2f} chrF {chrf:.2f}")
EOF
  done
fi

#!/usr/bin/env bash
# Decoding at production speed (issue 18): ensembles and lexical shortlists on LibreOffice en-de, the model of
# ../shared/bench/PEERS.md (bench/rnnsearch_lo_ende.sh's, 2 threads, batch 32).
# Usage: bench/decoding_lo_ende.sh models NAME...|ensemble|shortlist|peers|profile
#   models NAME...: train models for STEPS updates (default 1500; fixed, so a slow sitting changes nothing) with
#            THREADS threads (default 2; 1 for two side by side): sp8k.s1 and sp8k.s2 (seeds 1 and 2 on the peers'
#            SentencePiece 8k corpus), word.s1 (every word of the training data as vocabulary: sacrebleu's 13a tokens,
#            24,335 German words, the largest vocabulary this corpus has), multi.s1 (English into German and French,
#            lo-ende and lo-enfr, 13a tokens, a target tag <2de>/<2fr> opening each source line: a 32,000-word target
#            vocabulary out of the two languages' 36,499 words, for the shortlist's 32k-word model; tested on en-de)
#   ensemble: test BLEU and decoding speed, beam 5, of sp8k.s1, sp8k.s2 and the two as an ensemble
#   shortlist: lexical tables by nmtkit align on each corpus's segmented training data, then test BLEU and decoding
#            speed of each model of MODELS (default "sp8k.s1 word.s1"), beam 5 and greedy, with the full output
#            layer and with each FIRST:BEST shortlist of SHORTLISTS (default "100:100 100:50 50:20"), alternately,
#            ROUNDS times (default 2); MODES (default "beam5 greedy") picks the searches
#   peers:   nmtkit's sp8k.s1 and OpenNMT-py's model (bench/opennmt_lo_ende.sh train, as many updates) decoding the
#            test set, greedy and beam 5, each toolkit's defaults otherwise, alternately, ROUNDS times
#   profile: bench/beam_profile.py on sp8k.s1 and the test set, beam 5 and greedy
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
dir=$runs/decoding
data=$shared/data/lo-ende
what=${1:-}
source "$here/lib.sh"
mkdir -p "$dir"
[ -f "$runs/corpus/manifest.json" ] || RUNS=$runs bash "$here/rnnsearch_lo_ende.sh" corpus

tokenized() {  # the word-level corpus: sacrebleu's 13a tokenizer on every side, every word in the vocabulary
  [ -f "$dir/word/manifest.json" ] && return
  tokenized13a "$data" "$dir/tok"
  nmtkit preprocess --train "$dir/tok/train" --valid "$dir/tok/dev" --test "$dir/tok/test" --src en --tgt de \
    --vocab word:32000 --max-len 80 -o "$dir/word" --overwrite
}

multilingual() {  # English into German and French: 13a tokens, a target tag on each source line, 32,000 target words
  [ -f "$dir/multi/manifest.json" ] && return
  tokenized
  tokenized13a "$shared/data/lo-enfr" "$dir/tok-fr" en fr
  local m=$dir/multi-text f
  mkdir -p "$m"
  for f in train dev test; do  # dev and test: German only
    sed 's/^/<2de> /' "$dir/tok/$f.en" > "$m/$f.en"
    cp "$dir/tok/$f.de" "$m/$f.xx"
  done
  sed 's/^/<2fr> /' "$dir/tok-fr/train.en" >> "$m/train.en"
  cat "$dir/tok-fr/train.fr" >> "$m/train.xx"
  nmtkit preprocess --train "$m/train" --valid "$m/dev" --test "$m/test" --src en --tgt xx \
    --vocab word:32000 --max-len 80 -o "$dir/multi" --overwrite
}

segmented() {  # the SentencePiece pieces of the peers' training data, for nmtkit align
  [ -f "$dir/sp/train.de" ] && return
  mkdir -p "$dir/sp"
  for l in en de; do
    python -c "
import sys, sentencepiece as s
m = s.SentencePieceProcessor(model_file='$shared/bench/lo-ende-sp8k/spm.model')
for line in sys.stdin:
    print(' '.join(m.encode(line.rstrip('\n'), out_type=str)))" < "$data/train.$l" > "$dir/sp/train.$l"
  done
}

# the test input, reference and shortlist table of a model by name
input_of() {
  case $1 in word.*) echo "$dir/tok/test.en" ;; multi.*) echo "$dir/multi-text/test.en" ;; *) echo "$data/test.en" ;; esac
}
ref_of() { case $1 in word.* | multi.*) echo "$dir/tok/test.de" ;; *) echo "$data/test.de" ;; esac; }
table_of() { case $1 in word.*) echo "$dir/word.lex" ;; multi.*) echo "$dir/multi.lex" ;; *) echo "$dir/sp8k.lex" ;; esac; }

case $what in
models)
  threads=${THREADS:-2}
  for name in "${@:2}"; do
    case $name in
      sp8k.s*) corpus=$runs/corpus ;;
      word.s*) tokenized; corpus=$dir/word ;;
      multi.s*) multilingual; corpus=$dir/multi ;;
      *) echo "error: models: unknown model $name (sp8k.sN, word.sN or multi.sN)" >&2; exit 2 ;;
    esac
    [ -f "$dir/$name/done" ] && continue
    resume=(); [ -f "$dir/$name/last.pt" ] && resume=(--resume)
    OMP_NUM_THREADS=$threads nmtkit train --data "$corpus" --save-dir "$dir/$name" "${rnnsearch_peers[@]}" \
      --threads "$threads" --seed "${name##*.s}" --max-steps "${STEPS:-1500}" --log-every 100 --valid-every 500 \
      --valid-max-sentences 300 --patience 0 "${resume[@]}" 2> "$dir/$name.train.log"
    touch "$dir/$name/done"
  done ;;
ensemble)
  export OMP_NUM_THREADS=2
  for run in sp8k.s1 sp8k.s2; do
    decode_one "$run beam5" "$data/test.en" "$data/test.de" "$dir/ens.$run" -m "$dir/$run/last.pt" --beam 5
  done
  decode_one "ensemble beam5" "$data/test.en" "$data/test.de" "$dir/ens.both" -m "$dir/sp8k.s1/last.pt" \
    -m "$dir/sp8k.s2/last.pt" --beam 5 ;;
shortlist)
  export OMP_NUM_THREADS=2
  segmented; tokenized; multilingual
  [ -f "$dir/sp8k.lex" ] || nmtkit align --src "$dir/sp/train.en" --tgt "$dir/sp/train.de" -o "$dir/sp8k.lex"
  [ -f "$dir/word.lex" ] || nmtkit align --src "$dir/tok/train.en" --tgt "$dir/tok/train.de" -o "$dir/word.lex"
  [ -f "$dir/multi.lex" ] || nmtkit align --src "$dir/multi-text/train.en" --tgt "$dir/multi-text/train.xx" \
    -o "$dir/multi.lex"
  for round in $(seq "${ROUNDS:-2}"); do
    for run in ${MODELS:-sp8k.s1 word.s1}; do
      for tag in ${MODES:-beam5 greedy}; do
        mode=$([ "$tag" = greedy ] && echo --greedy || echo --beam 5)
        # shellcheck disable=SC2086
        decode_one "round $round $run $tag full" "$(input_of $run)" "$(ref_of $run)" "$dir/sl.$run.$tag.full" \
          -m "$dir/$run/last.pt" $mode
        for list in ${SHORTLISTS:-100:100 100:50 50:20}; do
          # shellcheck disable=SC2086
          decode_one "round $round $run $tag shortlist $list" "$(input_of $run)" "$(ref_of $run)" \
            "$dir/sl.$run.$tag.$list" -m "$dir/$run/last.pt" $mode --shortlist "$(table_of $run)" \
            --shortlist-first "${list%%:*}" --shortlist-best "${list##*:}"
        done
      done
    done
  done ;;
peers)
  # nmtkit's sp8k.s1 and OpenNMT-py's model (bench/opennmt_lo_ende.sh train, the same updates) decoding the test
  # set, greedy and beam 5, batch 32, 2 threads, each toolkit's defaults otherwise; alternately, ROUNDS times
  export OMP_NUM_THREADS=2
  for round in $(seq "${ROUNDS:-2}"); do
    for mode in "--greedy" "--beam 5"; do
      tag=$(echo "$mode" | tr -d ' -')
      # shellcheck disable=SC2086
      decode_one "round $round nmtkit $tag" "$data/test.en" "$data/test.de" "$dir/peers.$tag" \
        -m "$dir/sp8k.s1/last.pt" $mode
    done
    echo "round $round OpenNMT-py:"
    RUNS=$runs bash "$here/opennmt_lo_ende.sh" decode
  done ;;
profile)
  # where a beam search's time goes, and the steps' compute bound (bench/beam_profile.py), beam 5 and greedy
  for beam in 5 1; do
    OMP_NUM_THREADS=2 python "$here/beam_profile.py" "$dir/sp8k.s1/last.pt" "$data/test.en" --beam $beam --threads 2
  done ;;
*) echo "usage: bench/decoding_lo_ende.sh models NAME...|ensemble|shortlist|peers|profile" >&2; exit 2 ;;
esac

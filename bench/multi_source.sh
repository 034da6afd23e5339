#!/usr/bin/env bash
# Multi-source attention (issue 16): automatic post-editing on real triplets and multimodal translation on emoji.
# Usage: bench/multi_source.sh ape|ape-compare|mmt|enfr|enfr-compare|speed
#   ape:   the triplets of recipes/ape_triplets.sh (RUNS/ape/triplets: LibreOffice help en-de, real MT output of
#          rnnsearch models that never saw the lines), preprocessed with --ape-edits mt; the do-nothing baseline
#          (MT as it is); then multi-source with the MT output alone (--encoders mt: the single-source model), concat,
#          flat, hierarchical, flat + sentinel, hierarchical + sentinel (CONFIGS picks some), STEPS (default 1000)
#          updates each, validating every VALID_EVERY (250); --edit-cost (each edit operation's cost, nats) tuned on
#          dev over EDIT_COSTS (default 0 0.5 1 2 4 8, lowest dev HTER); test HTER and BLEU (beam BEAM, default 5)
#          against the post-edits, without and with the tuned cost; the test outputs kept in OUTPUTS/ape (TAG names
#          a variant's runs and outputs)
#   ape-compare: `nmtkit compare` (HTER, BLEU) of every kept APE system, plain and tuned, against doing nothing
#   mmt:   emoji (../shared/data/emoji): image + English name -> German name. Image features from the small CNN of
#          bench/emoji_cnn.py (7 x 7 x 256); text only (--encoders src), concat (GRU), flat and hierarchical
#          (conditional GRU, as the paper), STEPS (default 1500) updates each, validation every 100 updates (about
#          an epoch); test BLEU (beam 5); learning curves (validation BLEU per epoch) in bench/figures
#   enfr:  English and French into German (../shared/data/lo-enfrde, LibreOffice help triples; one joint
#          SentencePiece model of 8,000 pieces, ENFR_VOCAB): ENFR_CONFIGS (default all of en fr concat flat hierarchical
#          flat-sentinel hierarchical-sentinel t-en t-serial t-parallel t-flat t-hierarchical; flat-balanced,
#          hierarchical-normalised, t-hierarchical-normalised, and with --encoder-dropout 0.5 flat-encoder-dropout,
#          hierarchical-encoder-dropout, t-flat-encoder-dropout and t-hierarchical-encoder-dropout, with 0.2
#          flat-encoder-dropout-0.2, hierarchical-encoder-dropout-0.2 and (with --normalise-contexts)
#          hierarchical-normalised-encoder-dropout-0.2, t-hierarchical-normalised-encoder-dropout-0.2,
#          flat-normalised and flat-normalised-encoder-dropout-0.2, and en-normalised (English alone, its states
#          layer-normalised: flat over one encoder), on request)
#          for each seed of SEEDS,
#          STEPS (default 2000) updates each with --diagnostics, validation every 250 updates (learning curves); the
#          RNNs (en, fr: single source through --encoders; conditional GRU decoders all) at the sizes above, the
#          t-* multi-source-transformer (t-en: single source) at 3+3 layers, d 256; test BLEU/chrF (beam 5), the
#          outputs kept in OUTPUTS/enfr (default bench/outputs, tracked); a system whose output is there is skipped,
#          and a run stopped before its output was made resumes from its last.pt
#   enfr-compare: `nmtkit compare` of every enfr system against the best single source (by mean test BLEU), the
#          learning curves in bench/figures/enfr_curves.png, and the diagnostics of each run at its last log
#   speed: in two rounds, training tok/s of each APE strategy and the single-source model (median of the 25-step
#          windows after step 50 of 150-step runs), and decoding sent/s of the multimodal models (mmt, seed 1: the
#          326 emoji test lines, greedy, batch 32) against the text-only one; run ape and mmt first
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), STEPS, SEEDS (default 1),
# THREADS (default 2; 1 for two runs side by side); mmt: MMT_CONFIGS (some of text concat flat hierarchical
# flat-balanced hierarchical-normalised flat-normalised; default the first four),
# OPTIONS (more training options, e.g. "--lr 0.0001") with TAG (named into the runs and the figure).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
outputs=${OUTPUTS:-$here/outputs}  # test outputs kept in git (enfr)
what=${1:-ape}
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads
source "$here/lib.sh"
sizes=(--arch multi-source --emb-size 128 --enc-size 128 --dec-size 256 --att-size 256 --dropout 0.2
       --batch-size 32 --optimizer adam --lr 0.001 --threads "$threads" --patience 0)
declare -A ape_configs=(
  [single]="--encoders mt --combination concat" [concat]="--combination concat"
  [flat]="--combination flat" [hierarchical]="--combination hierarchical"
  [flat-sentinel]="--combination flat --sentinel" [hierarchical-sentinel]="--combination hierarchical --sentinel")
read -r -a ape_order <<< "${CONFIGS:-single concat flat hierarchical flat-sentinel hierarchical-sentinel}"

ape_data() {
  local dir=$runs/ape
  [ -f "$dir/triplets/test.pe" ] || { echo "error: $dir/triplets: run recipes/ape_triplets.sh $dir first" >&2; exit 2; }
  [ -f "$dir/data/manifest.json" ] || nmtkit preprocess --train "$dir/triplets/train" --valid "$dir/triplets/dev" \
    --test "$dir/triplets/test" --src src --src mt --tgt pe --ape-edits mt --vocab word:20000 --max-len 100 \
    -o "$dir/data" 2> "$dir/data.log"
}

case $what in
ape)
  ape_data
  dir=$runs/ape t=$runs/ape/triplets kept=$outputs/ape
  mkdir -p "$kept"
  ter() { nmtkit score --metric ter -r "$t/$1.pe" -i "$2" --score-only; }  # ter SPLIT OUTPUT
  bleu() { nmtkit score --metric bleu --tokenize none -r "$t/$1.pe" -i "$2" --score-only; }
  post_edit() {  # post_edit SPLIT COST OUTPUT: SPLIT's MT post-edited by $run ($name), each edit costing COST nats
    local inputs=(-i "$t/$1.src" -i "$t/$1.mt"); [ "$name" = single ] && inputs=(-i "$t/$1.mt")  # its one input
    nmtkit translate -m "$run/last.pt" --beam "${BEAM:-5}" --threads "$threads" --edit-cost "$2" "${inputs[@]}" \
      -o "$3" 2>> "$run.log"
  }
  echo "do nothing: dev HTER $(ter dev "$t/dev.mt") BLEU $(bleu dev "$t/dev.mt");" \
       "test HTER $(ter test "$t/test.mt") BLEU $(bleu test "$t/test.mt")"
  for seed in ${SEEDS:-1}; do
    for name in "${ape_order[@]}"; do
      run=$dir/$name${TAG:+.$TAG}.s$seed out=$kept/$name${TAG:+.$TAG}
      [ -s "$out.tuned.s$seed.pe" ] && continue  # done in an earlier sitting
      read -r -a extra <<< "${ape_configs[$name]}"
      [ -f "$run/last.pt" ] || nmtkit train --data "$dir/data" --save-dir "$run" "${sizes[@]}" "${extra[@]}" \
        --decoder-cell gru --seed "$seed" --max-steps "${STEPS:-1000}" --valid-every "${VALID_EVERY:-250}" \
        --valid-max-sentences 300 2> "$run.log"
      best=0 best_ter=
      for cost in ${EDIT_COSTS:-0 0.5 1 2 4 8}; do  # --edit-cost tuned on dev: the lowest dev HTER
        post_edit dev "$cost" "$run.dev.cost$cost.pe"
        score=$(ter dev "$run.dev.cost$cost.pe")
        echo "$name seed $seed: --edit-cost $cost: dev HTER $score BLEU $(bleu dev "$run.dev.cost$cost.pe")"
        if [ -z "$best_ter" ] || awk -v a="$score" -v b="$best_ter" 'BEGIN { exit !(a < b) }'; then
          best=$cost best_ter=$score
        fi
      done
      post_edit test 0 "$out.s$seed.pe"
      if [ "$best" = 0 ]; then cp "$out.s$seed.pe" "$out.tuned.s$seed.pe.part"  # (cost 0: the same search)
      else post_edit test "$best" "$out.tuned.s$seed.pe.part"; fi
      mv "$out.tuned.s$seed.pe.part" "$out.tuned.s$seed.pe"
      echo "$best" > "$out.tuned.s$seed.cost"
      echo "$name${TAG:+ ($TAG)} seed $seed: test HTER $(ter test "$out.s$seed.pe") BLEU $(bleu test "$out.s$seed.pe");" \
           "with --edit-cost $best (dev): HTER $(ter test "$out.tuned.s$seed.pe") BLEU $(bleu test "$out.tuned.s$seed.pe")"
    done
  done ;;
ape-compare)  # every kept APE system (NAME[.TAG][.tuned].sSEED.pe), plain and tuned, against doing nothing
  t=$runs/ape/triplets kept=$outputs/ape systems=(--sys "do-nothing=$t/test.mt")
  for variant in $(find "$kept" -name '*.s[0-9]*.pe' -printf '%f\n' | sed 's/\.s[0-9]*\.pe$//' | sort -u); do
    files=("$kept/$variant".s[0-9]*.pe)
    systems+=(--sys "$variant=$(IFS=,; echo "${files[*]}")")
  done
  nmtkit compare -r "$t/test.pe" "${systems[@]}" --metric ter,bleu --tokenize none ;;
mmt)
  dir=$runs/mmt emoji=$shared/data/emoji
  mkdir -p "$dir"
  if [ ! -f "$dir/cnn.test.npy" ]; then
    tail -n +2 "$emoji/captions.tsv" | cut -f1,2 > "$dir/captions.tsv"
    python "$here/emoji_cnn.py" "$emoji" "$dir" "${EPOCHS:-12}" > "$dir/cnn.log"
  fi
  for split in train dev test; do  # one line per image of the split, in the order of its list (the features' rows)
    python - "$emoji" "$split" "$dir" <<'EOF'
import csv, sys
emoji, split, out = sys.argv[1:]
rows = {r["image"]: r for r in csv.DictReader(open(f"{emoji}/captions.tsv", encoding="utf-8"), delimiter="\t")}
names = [n.strip() for n in open(f"{emoji}/splits/{split}.txt", encoding="utf-8") if n.strip()]
for key in ("en", "de"):
    with open(f"{out}/{split}.{key}", "w", encoding="utf-8") as f:
        f.writelines(rows[n][key] + "\n" for n in names)
with open(f"{out}/{split}.img", "w", encoding="utf-8") as f:
    f.writelines(n + "\n" for n in names)
EOF
  done
  [ -f "$dir/data/manifest.json" ] || nmtkit preprocess --train "$dir/train" --valid "$dir/dev" --test "$dir/test" \
    --src en --tgt de --src-images img --features "train=$dir/cnn.train.npy" --features "valid=$dir/cnn.dev.npy" \
    --features "test=$dir/cnn.test.npy" --vocab word:10000 --max-len 0 -o "$dir/data" 2> "$dir/data.log"
  declare -A mmt_configs=([text]="--encoders src --decoder-cell cgru" [concat]="--combination concat --decoder-cell gru"
                          [flat]="--combination flat --decoder-cell cgru"
                          [hierarchical]="--combination hierarchical --decoder-cell cgru"
                          [flat-balanced]="--combination flat --decoder-cell cgru --balance-encoders"
                          [hierarchical-normalised]="--combination hierarchical --decoder-cell cgru --normalise-contexts"
                          [flat-normalised]="--combination flat --decoder-cell cgru --normalise-contexts")
  curves=()
  for seed in ${SEEDS:-1}; do
    for name in ${MMT_CONFIGS:-text concat flat hierarchical}; do
      run=$dir/$name${TAG:+.$TAG}.s$seed
      read -r -a extra <<< "${mmt_configs[$name]} ${OPTIONS:-}"
      [ -f "$run/last.pt" ] || nmtkit train --data "$dir/data" --save-dir "$run" "${sizes[@]}" "${extra[@]}" \
        --seed "$seed" --max-steps "${STEPS:-1500}" --valid-every 100 2> "$run.log"
      features=(--features "$dir/cnn.test.npy"); [ "$name" = text ] && features=()  # the text-only model reads none
      nmtkit translate -m "$run/last.pt" --beam 5 --threads "$threads" -i "$dir/test.en" "${features[@]}" \
        -o "$run.test.de" 2>> "$run.log"
      echo "$name seed $seed: test BLEU $(nmtkit score --metric bleu -r "$dir/test.de" -i "$run.test.de" --score-only)" \
           "chrF $(nmtkit score --metric chrf -r "$dir/test.de" -i "$run.test.de" --score-only)"
      curves+=("$name=$run/train.jsonl")
    done
  done
  mkdir -p "$here/figures"
  python "$here/learning_curves.py" "$here/figures/mmt_emoji_curves${TAG:+_$TAG}.png" "$(wc -l < "$dir/train.en")" 32 \
    "${curves[@]}" ;;
speed)
  ape_data
  dir=$runs/ape mmt=$runs/mmt
  for round in 1 2; do
    for name in "${ape_order[@]}"; do  # training on the APE corpus
      run=$dir/speed.$name
      read -r -a extra <<< "${ape_configs[$name]}"
      fresh "$run"
      nmtkit train --data "$dir/data" --save-dir "$run" "${sizes[@]}" "${extra[@]}" --decoder-cell gru \
        --max-steps 150 --log-every 25 --valid-every 100000 --valid-max-sentences 10 2> "$run.log"
      python - "$run/train.jsonl" "$name" "$round" <<'EOF2'
import json, statistics, sys
log, name, round_ = sys.argv[1:]
train = [r for r in map(json.loads, open(log)) if r["type"] == "train" and r["step"] > 50]
print(f"round {round_} training {name}: {statistics.median(r['tok_per_s'] for r in train):,.0f} tok/s")
EOF2
    done
    for name in text concat flat hierarchical; do  # decoding with the trained multimodal models (mmt, seed 1)
      features=(--features "$mmt/cnn.test.npy"); [ "$name" = text ] && features=()
      nmtkit translate -m "$mmt/$name.s1/last.pt" --greedy --batch-size 32 --threads "$threads" -i "$mmt/test.en" \
        "${features[@]}" -o "$mmt/speed.$name.de" 2> "$mmt/speed.$name.log"
      echo "round $round decoding $name: $(grep -o 'translated .*' "$mmt/speed.$name.log")"
    done
  done ;;
enfr)
  dir=$runs/enfr corpus=$shared/data/lo-enfrde
  mkdir -p "$dir" "$outputs/enfr"
  [ -f "$dir/data/manifest.json" ] || nmtkit preprocess --train "$corpus/train" --valid "$corpus/dev" \
    --test "$corpus/test" --src en=en --src fr --tgt de --vocab "${ENFR_VOCAB:-spm:8000}" --max-len 80 -o "$dir/data" 2> "$dir/data.log"
  transformer=(--arch multi-source-transformer --d-model 256 --ffn-size 1024 --heads 4 --enc-layers 3 --dec-layers 3
               --dropout 0.1 --label-smoothing 0.1 --batch-type tokens --batch-size 2048 --optimizer adam --lr 0.0015
               --lr-schedule inverse-sqrt --warmup-steps 500 --clip-norm 1.0 --threads "$threads" --patience 0)
  declare -A enfr_configs=([en]="--encoders en" [fr]="--encoders fr" [concat]="--combination concat"
    [flat]="--combination flat" [hierarchical]="--combination hierarchical"
    [flat-balanced]="--combination flat --balance-encoders"
    [hierarchical-normalised]="--combination hierarchical --normalise-contexts"
    [flat-sentinel]="--combination flat --sentinel" [hierarchical-sentinel]="--combination hierarchical --sentinel"
    [t-en]="--encoders en" [t-serial]="--combination serial" [t-parallel]="--combination parallel"
    [t-flat]="--combination flat" [t-hierarchical]="--combination hierarchical"
    [t-hierarchical-normalised]="--combination hierarchical --normalise-contexts"
    [flat-encoder-dropout]="--combination flat --encoder-dropout 0.5"
    [hierarchical-encoder-dropout]="--combination hierarchical --encoder-dropout 0.5"
    [t-flat-encoder-dropout]="--combination flat --encoder-dropout 0.5"
    [t-hierarchical-encoder-dropout]="--combination hierarchical --encoder-dropout 0.5"
    [flat-encoder-dropout-0.2]="--combination flat --encoder-dropout 0.2"
    [hierarchical-encoder-dropout-0.2]="--combination hierarchical --encoder-dropout 0.2"
    [hierarchical-normalised-encoder-dropout-0.2]="--combination hierarchical --normalise-contexts --encoder-dropout 0.2"
    [flat-normalised]="--combination flat --normalise-contexts"
    [en-normalised]="--encoders en --combination flat --normalise-contexts"
    [flat-normalised-encoder-dropout-0.2]="--combination flat --normalise-contexts --encoder-dropout 0.2"
    [t-hierarchical-normalised-encoder-dropout-0.2]="--combination hierarchical --normalise-contexts --encoder-dropout 0.2")
  all="en fr concat flat hierarchical flat-sentinel hierarchical-sentinel t-en t-serial t-parallel t-flat t-hierarchical"
  all_known="$all flat-balanced hierarchical-normalised t-hierarchical-normalised"
  all_known+=" flat-encoder-dropout hierarchical-encoder-dropout t-flat-encoder-dropout t-hierarchical-encoder-dropout"
  all_known+=" flat-encoder-dropout-0.2 hierarchical-encoder-dropout-0.2 hierarchical-normalised-encoder-dropout-0.2"
  all_known+=" t-hierarchical-normalised-encoder-dropout-0.2 flat-normalised flat-normalised-encoder-dropout-0.2"
  all_known+=" en-normalised"
  for seed in ${SEEDS:-1}; do
    for name in ${ENFR_CONFIGS:-$all}; do
      if [ -z "${enfr_configs[$name]:-}" ]; then
        echo "error: ENFR_CONFIGS: unknown system $name ($all_known)" >&2
        exit 2
      fi
      run=$dir/$name.s$seed kept=$outputs/enfr/$name.s$seed.de
      [ -s "$kept" ] && continue  # done in an earlier sitting
      read -r -a extra <<< "${enfr_configs[$name]} ${OPTIONS:-}"
      model=("${sizes[@]}" --batch-size 64 --decoder-cell cgru); [[ $name == t-* ]] && model=("${transformer[@]}")
      resume=()  # a run stopped in an earlier sitting goes on from its last checkpoint
      if [ -f "$run/last.pt" ]; then resume=(--resume); else fresh "$run"; : > "$run.log"; fi
      nmtkit train --data "$dir/data" --save-dir "$run" "${model[@]}" "${extra[@]}" --seed "$seed" \
        --max-steps "${STEPS:-2000}" --valid-every 250 --valid-max-sentences 300 --log-every 50 --diagnostics \
        "${resume[@]}" 2>> "$run.log"
      case $name in
      en|t-en|en-normalised) inputs=(-i "$corpus/test.en") ;;
      fr) inputs=(-i "$corpus/test.fr") ;;
      *) inputs=(-i "$corpus/test.en" -i "$corpus/test.fr") ;;
      esac
      nmtkit translate -m "$run/last.pt" --beam 5 --batch-size 32 --threads "$threads" "${inputs[@]}" \
        -o "$run.test.de" 2>> "$run.log"
      cp "$run.test.de" "$kept"
      echo "$name seed $seed: test BLEU $(nmtkit score --metric bleu -r "$corpus/test.de" -i "$kept" --score-only)" \
           "chrF $(nmtkit score --metric chrf -r "$corpus/test.de" -i "$kept" --score-only)"
    done
  done ;;
enfr-compare)
  mkdir -p "$here/figures"
  python "$here/multi_source_table.py" "$outputs/enfr" "$shared/data/lo-enfrde/test.de" "$runs/enfr" \
    "$here/figures/enfr_curves.png" ;;
*)
  echo "usage: bench/multi_source.sh ape|ape-compare|mmt|enfr|enfr-compare|speed" >&2; exit 2 ;;
esac

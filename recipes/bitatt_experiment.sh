# shellcheck shell=bash
# The part of recipes/wmt_ende_bitatt.sh and recipes/nist_zhen.sh that the two tasks share (not a recipe to run):
# each of them sources this file, gets its task's data and calls bitatt_experiment, the rest of
# bidirectional-target-attention.txt §4: the systems of Table 2, their test BLEU beside the paper's.
#
# bitatt_experiment TASK SRC TGT VOCAB NREFS TEST... runs, from WORKDIR/text/{train,dev}.{SRC,TGT} and
# WORKDIR/text/TEST.SRC (tokenised) and the references WORKDIR/refs/TEST.ref0 .. ref{NREFS-1} (as published):
#   2. a corpus of the VOCAB (nmtkit preprocess --vocab) units of each side, sentences of at most 50 of them (§4.1;
#      with BPE, 50 BPE units, as OpenNMT, the paper's toolkit, counts the tokens it is given);
#   3. one model per system of SYSTEMS (default all, in Table 2's order): anmt (ANMT, rnnsearch), ftatt-r (FTAtt-R,
#      ftatt-rnn), rtatt-r (RTAtt-R, rtatt-rnn), bitatt-r (BiTAtt-R, bitatt-rnn), with recipes/configs/bitatt_rnn.yaml;
#      tfmr (TFMR, the base transformer) and bitatt-t (BiTAtt-T, bitatt-transformer), with
#      recipes/configs/bitatt_transformer.yaml, then their kept checkpoints averaged; the reverse decoders trained on
#      the reference (--reverse-context reference, the paper's Eq. 20, 23, 27);
#   4. each TEST translated by each system with beam BEAM (10, §5.1), detokenised with Moses' detokenizer, and
#      scored with sacrebleu against the references: TASK wmt, SacreBLEU as it is (case-sensitive, 13a);
#      TASK nist, case-insensitive 4-gram BLEU with the NREFS references (13a: mteval-v13a's tokenisation);
#   5. Table 2's columns of TASK (the paper's) beside this run's, with their average.
# The paper's other rows are not here: PBSMT, ABDNMT (asynchronous bidirectional decoding) and ANMT(R2L) are not
# nmtkit models.
# Settings (besides the task's): SYSTEMS; BEAM (10); OVERRIDES, options added to every training after the config
# (e.g. "--max-steps 1000" for a trial; they must suit both kinds of model, or choose SYSTEMS of one kind);
# DEVICE (auto); DOWNLOADER (see lib.sh).
# Outputs: WORKDIR/data (the corpus), WORKDIR/models/SYSTEM (tfmr and bitatt-t: averaged.pt too), WORKDIR/out/
# (SYSTEM.TEST: tokenised translations, SYSTEM.TEST.detok: detokenised), WORKDIR/scores/SYSTEM.TEST.bleu.
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step. The machinery
# (options, steps, downloads, training) is recipes/lib.sh's.

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "error: $0 is the part that recipes/wmt_ende_bitatt.sh and recipes/nist_zhen.sh share: run one of them" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
configs=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/configs

# Table 2: each system's architecture, label, and BLEU on NIST03-06 and average, and on newstest2014-15 and average
bitatt_all="anmt ftatt-r rtatt-r bitatt-r tfmr bitatt-t"
declare -A bitatt_arch=([anmt]=rnnsearch [ftatt-r]=ftatt-rnn [rtatt-r]=rtatt-rnn [bitatt-r]=bitatt-rnn
  [tfmr]=transformer [bitatt-t]=bitatt-transformer)
declare -A bitatt_label=([anmt]=ANMT [ftatt-r]=FTAtt-R [rtatt-r]=RTAtt-R [bitatt-r]=BiTAtt-R [tfmr]=TFMR
  [bitatt-t]=BiTAtt-T)
declare -A bitatt_paper_nist=([anmt]="36.42 39.33 35.37 35.56 36.67" [ftatt-r]="40.35 42.58 39.62 38.83 40.35"
  [rtatt-r]="40.52 42.72 39.83 38.97 40.51" [bitatt-r]="40.82 43.09 41.17 39.35 41.11"
  [tfmr]="45.57 46.40 46.11 44.92 45.75" [bitatt-t]="46.31 47.15 46.97 45.71 46.54")
declare -A bitatt_paper_wmt=([anmt]="22.42 25.13 23.76" [ftatt-r]="23.62 26.35 24.99" [rtatt-r]="23.80 26.64 25.22"
  [bitatt-r]="24.12 26.81 25.47" [tfmr]="27.43 29.54 28.49" [bitatt-t]="28.15 30.13 29.14")
read -r -a systems <<< "${SYSTEMS:-$bitatt_all}"
for name in "${systems[@]}"; do
  [ -n "${bitatt_arch[$name]:-}" ] || { echo "error: SYSTEMS: unknown system '$name' (one of: $bitatt_all)" >&2
                                         exit 2; }
done

bitatt_experiment() {  # bitatt_experiment TASK SRC TGT VOCAB NREFS TEST...: stages 2-5 above
  local task=$1 src=$2 tgt=$3 vocab=$4 nrefs=$5 name test i model hyp
  shift 5
  local tests=("$@") text=$work/text out=$work/out scores=$work/scores
  local -a overrides ref_options case=() paper
  read -r -a overrides <<< "${OVERRIDES:-}"
  [ "$task" = nist ] && case=(--lowercase)

  stage "2. corpus: $vocab, sentences of at most 50 tokens"
  [ -f "$work/data/manifest.json" ] || step nmtkit preprocess --train "$text/train" --valid "$text/dev" \
    --src "$src" --tgt "$tgt" --vocab "$vocab" --max-len 50 -o "$work/data"

  for name in "${systems[@]}"; do
    stage "3. train ${bitatt_label[$name]} (${bitatt_arch[$name]})"
    local -a extra=()
    [[ $name == rtatt-r || $name == bitatt-* ]] && extra=(--reverse-context reference)
    local config=bitatt_rnn.yaml
    [[ ${bitatt_arch[$name]} == *transformer ]] && config=bitatt_transformer.yaml
    train "$work/models/$name" --config "$configs/$config" --arch "${bitatt_arch[$name]}" --data "$work/data" \
      --device "$device" "${extra[@]}" "${overrides[@]}"
    if [ "$config" = bitatt_transformer.yaml ] && [ ! -e "$work/models/$name/averaged.pt" ]; then
      step nmtkit average --run "$work/models/$name" -o "$work/models/$name/averaged.pt"
    fi
  done

  for dir in "$out" "$scores"; do [ -d "$dir" ] || step mkdir -p "$dir"; done
  for name in "${systems[@]}"; do
    model=$work/models/$name/best.pt
    [[ ${bitatt_arch[$name]} == *transformer ]] && model=$work/models/$name/averaged.pt
    for test in "${tests[@]}"; do
      stage "4. translate $test and score it: ${bitatt_label[$name]}"
      hyp=$out/$name.$test
      [ -e "$hyp" ] || step nmtkit translate -m "$model" --beam "${BEAM:-10}" --device "$device" \
        -i "$text/$test.$src" -o "$hyp"
      into "$hyp.detok" moses detokenize "$tgt" "$hyp"
      ref_options=()
      for ((i = 0; i < nrefs; i++)); do ref_options+=(-r "$work/refs/$test.ref$i"); done
      into "$scores/$name.$test.bleu" nmtkit score --metric bleu "${case[@]}" "${ref_options[@]}" -i "$hyp.detok" \
        --score-only
    done
  done
  [ "$dry" = 1 ] && return

  if [ "$task" = nist ]; then
    echo "== Table 2 (bidirectional-target-attention.txt), NIST Chinese-English, and this run: case-insensitive BLEU"
  else
    echo "== Table 2 (bidirectional-target-attention.txt), WMT English-German, and this run: SacreBLEU"
  fi
  local columns=("${tests[@]}" average)
  printf '%-10s %-6s' "" ""; printf ' %12s' "${columns[@]}"; echo
  for name in "${systems[@]}"; do
    if [ "$task" = nist ]; then read -r -a paper <<< "${bitatt_paper_nist[$name]}"
    else read -r -a paper <<< "${bitatt_paper_wmt[$name]}"; fi
    local ours=()
    for test in "${tests[@]}"; do ours+=("$(cat "$scores/$name.$test.bleu")"); done
    ours+=("$(printf '%s\n' "${ours[@]}" | awk '{ s += $1 } END { printf "%.2f", s / NR }')")
    printf '%-10s %-6s' "${bitatt_label[$name]}" paper; printf ' %12s' "${paper[@]}"; echo
    printf '%-10s %-6s' "" nmtkit; printf ' %12s' "${ours[@]}"; echo
  done
}

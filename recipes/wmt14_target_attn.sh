# shellcheck shell=bash
# The part of recipes/wmt14_enfr.sh and recipes/wmt14_ende.sh that the two pairs share (not a recipe to run): each
# of them sources this file, gets its pair's data and calls target_attn_experiment, the rest of
# target-target-attention.txt §3 on WMT'14: Table 1 (BLEU and perplexity of RNNsearch and of target attention on
# newstest2014), the UNK replacement of §3.2 and Fig. 2 (BLEU by source-sentence length).
#
# target_attn_experiment TGT VOCAB CLIP "PAPER" runs, from WORKDIR/text/{train,dev,test}.{en,TGT} (tokenised):
#   2. a word-level corpus: the VOCAB most frequent words of each side, training pairs of at most 50 words (§3.1);
#   3. RNNsearch, the warm start (recipes/configs/wmt14_rnnsearch.yaml: Adadelta, batches of 80);
#   4. target attention warm-started from it (recipes/configs/wmt14_target_attn.yaml: SGD from 0.4, halved when the
#      dev BLEU drops, gradients clipped at CLIP), then, once halving no longer helps, the best model trained on
#      with the embeddings frozen, from the learning rate it had reached, for up to three more days (§3.1);
#   5. a lexical table of the training data for the <unk> replacement of §3.2 (fast_align's model, nmtkit align);
#   6. newstest2014 translated by both with beam BEAM (12, §3.1), the attention kept, <unk> replaced by the
#      translation of the most attended source word, tokenised case-sensitive BLEU (multi-bleu.perl's: sacrebleu
#      with --tokenize none) with and without the replacement and the perplexity of the references (Eq. 13): lib.sh's
#      translate_unk_score;
#   7. BLEU by source length against RNNsearch (Fig. 2);
#      prints Table 1's column for the pair (PAPER: "RNNSEARCH-BLEU TATT-BLEU TATT-BLEU-WITH-UNK-REPLACEMENT
#      RNNSEARCH-PPL TATT-PPL", "-" where the paper gives none) beside this run's numbers.
# Settings (besides the pair's): BEAM (12); OVERRIDES, options added to every training after the config (e.g.
# "--max-steps 1000 --emb-size 256" for a trial); DEVICE (auto); DOWNLOADER (see lib.sh).
# Outputs: WORKDIR/data (the corpus), WORKDIR/models/{rnnsearch,target-attn,target-attn-frozen}, WORKDIR/out/
# (translations NAME.test.TGT, with <unk> replaced NAME.test.unk.TGT, attention NAME.att.h5; NAME rnnsearch or
# target-attn), WORKDIR/lex.tsv (the lexical table), WORKDIR/scores/ (each number, and fig2.txt, .csv, .png).
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step. The machinery
# (options, steps, downloads, training) is recipes/lib.sh's.

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "error: $0 is the part that recipes/wmt14_enfr.sh and recipes/wmt14_ende.sh share: run one of them" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
configs=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/configs

target_attn_experiment() {  # target_attn_experiment TGT VOCAB CLIP "PAPER": stages 2-7 above
  local tgt=$1 vocab=$2 clip=$3 paper name dir hyp
  local -a overrides
  read -r -a paper <<< "$4"
  read -r -a overrides <<< "${OVERRIDES:-}"
  local text=$work/text models=$work/models out=$work/out scores=$work/scores

  stage "2. corpus: ${vocab} words a side, pairs of at most 50 words"
  [ -f "$work/data/manifest.json" ] || step nmtkit preprocess --train "$text/train" --valid "$text/dev" --src en \
    --tgt "$tgt" --vocab "word:$vocab" --max-len 50 -o "$work/data"

  local common=(--data "$work/data" --device "$device")
  stage "3. RNNsearch, the warm start (Adadelta)"
  train "$models/rnnsearch" --config "$configs/wmt14_rnnsearch.yaml" "${common[@]}" "${overrides[@]}"
  stage "4. target attention from RNNsearch (SGD, halving, clipping at $clip), then with the embeddings frozen"
  train "$models/target-attn" --config "$configs/wmt14_target_attn.yaml" --clip-norm "$clip" "${common[@]}" \
    --init-from "$models/rnnsearch/best.pt" "${overrides[@]}"
  train "$models/target-attn-frozen" --config "$configs/wmt14_target_attn.yaml" --clip-norm "$clip" \
    --max-time 4320 "${common[@]}" --init-from "$models/target-attn/best.pt" --init-lr --freeze-embeddings \
    "${overrides[@]}"

  declare -A model=([rnnsearch]=$models/rnnsearch/best.pt [target-attn]=$models/target-attn-frozen/best.pt)
  for dir in "$out" "$scores"; do [ -d "$dir" ] || step mkdir -p "$dir"; done
  stage "5. a lexical table of the training data for <unk> replacement (fast_align's model, nmtkit align)"
  into "$work/lex.tsv" nmtkit align --src "$text/train.en" --tgt "$text/train.$tgt"
  for name in rnnsearch target-attn; do
    stage "6. newstest2014: translation by $name (beam ${BEAM:-12}), <unk> replacement, tokenised BLEU, perplexity"
    translate_unk_score "$name" "${model[$name]}" "$text/test.en" "$text/test.$tgt" "$work/lex.tsv" "$out" "$scores"
  done
  stage "7. BLEU by source length"
  into "$scores/fig2.txt" nmtkit bucket-bleu --src "$text/test.en" --ref "$text/test.$tgt" --bleu-tokenize none \
    --hyp "rnnsearch=$out/rnnsearch.test.$tgt" --hyp "target-attn=$out/target-attn.test.$tgt" \
    --csv "$scores/fig2.csv" --plot "$scores/fig2.png" --title "BLEU by source length, newstest2014 en-$tgt"
  [ "$dry" = 1 ] && return

  echo "== Table 1 (target-target-attention.txt), En->${tgt^}, and this run: newstest2014"
  row() { printf '%-12s %7s %7s   %7s %7s   %7s %7s\n' "$@"; }
  row "" BLEU "" "+UNK" replaced perplexity ""
  row "" paper nmtkit paper nmtkit paper nmtkit
  row RNNsearch "${paper[0]}" "$(cat "$scores/rnnsearch.test.bleu")" - "$(cat "$scores/rnnsearch.test.unk.bleu")" \
    "${paper[3]}" "$(cat "$scores/rnnsearch.ppl")"
  row "Target Attn" "${paper[1]}" "$(cat "$scores/target-attn.test.bleu")" "${paper[2]}" \
    "$(cat "$scores/target-attn.test.unk.bleu")" "${paper[4]}" "$(cat "$scores/target-attn.ppl")"
  echo "== Fig. 2: BLEU by source length (also $scores/fig2.png)"
  cat "$scores/fig2.txt"
}

#!/usr/bin/env bash
# English -> French with target attention: target-target-attention.txt §3 (Table 1's En->Fr column: RNNsearch
# 29.93 and target attention 31.63 BLEU, perplexities 4.71 and 4.19; 34.49 with <unk> replaced, §3.2; Fig. 2).
# The data of Jean et al. (2015), the paper's [8]: the WMT'14 bitexts as selected by Schwenk for Bahdanau et al.
# and Cho et al. (12M pairs; the paper: "12M"), newstest2012+2013 to validate, newstest2014 to test, all already
# tokenised with Moses' tokenizer (the files are used as they are). 30,000 words a side, gradients clipped at 1.0.
# The stages after the data, the settings and the outputs are recipes/wmt14_target_attn.sh's (see its header).
#
# Usage: recipes/wmt14_enfr.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./wmt14-enfr)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads, checked, unpacked):
#   LIUM_BITEXTS   bitexts.tgz: bitexts.selected/{ep7_pc45,nc9,dev08_11,crawl,ccb2_pc30,un2000_pc34}.{en,fr}.gz
#                  [default http://www-lium.univ-lemans.fr/~schwenk/cslm_joint_paper/data/bitexts.tgz]
#   LIUM_DEV_TEST  dev+test.tgz: dev/ntst1213.{en,fr} (newstest2012+2013) and dev/ntst14.{en,fr} (newstest2014)
#                  [default http://www-lium.univ-lemans.fr/~schwenk/cslm_joint_paper/data/dev+test.tgz]
# Output: WORKDIR/text/{train,dev,test}.{en,fr}, then those of recipes/wmt14_target_attn.sh; Table 1's En->Fr
# column and Fig. 2's table on standard output.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=wmt14_target_attn.sh
source "$(dirname "$0")/wmt14_target_attn.sh"
options wmt14-enfr "$@"
lium=http://www-lium.univ-lemans.fr/~schwenk/cslm_joint_paper/data
bitexts_in=${LIUM_BITEXTS:-$lium/bitexts.tgz}
dev_test_in=${LIUM_DEV_TEST:-$lium/dev+test.tgz}

stage "1. data: Schwenk's selection of the WMT'14 bitexts, newstest2012+2013, newstest2014"
text=$work/text
if [ ! -f "$text/test.fr" ]; then
  input LIUM_BITEXTS "$bitexts_in"
  input LIUM_DEV_TEST "$dev_test_in"
  inputs_found
  bitexts=$(unpacked "$bitexts_in")
  dev_test=$(unpacked "$dev_test_in")
  [ -d "$text" ] || step mkdir -p "$text"
  for lang in en fr; do
    parts=()
    for part in ep7_pc45 nc9 dev08_11 crawl ccb2_pc30 un2000_pc34; do
      parts+=("$bitexts/bitexts.selected/$part.$lang.gz")
    done
    into "$text/train.$lang" gzip -dc "${parts[@]}"
    into "$text/dev.$lang" cat "$dev_test/dev/ntst1213.$lang"
    into "$text/test.$lang" cat "$dev_test/dev/ntst14.$lang"
  done
fi
for split in train dev test; do same_lines "$text/$split.en" "$text/$split.fr"; done

target_attn_experiment fr 30000 1.0 "29.93 31.63 34.49 4.71 4.19"

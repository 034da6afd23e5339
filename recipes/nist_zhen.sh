#!/usr/bin/env bash
# Chinese -> English with forward, reverse and bidirectional target attention: bidirectional-target-attention.txt
# §4 and Table 2's NIST columns (ANMT 36.42 39.33 35.37 35.56 ... BiTAtt-T 46.31 47.15 46.97 45.71 on NIST03-06).
# 1.25M pairs of the LDC corpora to train, NIST02 to validate, NIST03, 04, 05 and 06 to test; vocabularies of the
# 32,000 most frequent words of each side, sentences of at most 50 words (§4.1); the English tokenised with Moses'
# tokenizer (sacremoses: pip install 'nmtkit[recipes]'), the Chinese as given (word-segmented); translations
# detokenised and scored by case-insensitive 4-gram BLEU against the four references (§4.1, after mteval: sacrebleu
# with its 13a tokenisation, mteval-v13a's, and --lowercase). The systems, their training, the settings and outputs
# are recipes/bitatt_experiment.sh's (see its header).
#
# The data is licensed by the Linguistic Data Consortium (https://www.ldc.upenn.edu): there is nothing to download,
# give local paths. The 1.25M pairs usually meant are LDC2002E18, LDC2003E07, LDC2003E14, the Hansards part of
# LDC2004T07, LDC2004T08 and LDC2005T06; the NIST sets are LDC2010T10 (MT02), T11 (MT03), T12 (MT04), T14 (MT05)
# and T17 (MT06).
#
# Usage: recipes/nist_zhen.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./nist-zhen)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs (required, local paths; one sentence a line, UTF-8):
#   NIST_TRAIN  the training text: NIST_TRAIN.zh (word-segmented) and NIST_TRAIN.en, line by line translations
#   NIST_TEST   a folder holding, for each of nist02 .. nist06, NAME.zh (the source, segmented as the training text)
#               and NAME.en0 .. NAME.en3 (the four references as published, e.g. the segments of each reference's
#               documents in the NIST SGML files, in the source's order)
# Output: WORKDIR/text/ (train and dev: nist02 with its first reference, tokenised; the test sources),
# WORKDIR/refs/nist0{3,4,5,6}.ref{0,1,2,3} (the references), then those of recipes/bitatt_experiment.sh; Table 2's
# NIST columns on standard output.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=bitatt_experiment.sh
source "$(dirname "$0")/bitatt_experiment.sh"
options nist-zhen "$@"
train_in=${NIST_TRAIN:-}
nist=${NIST_TEST:-}
licensed="licensed by the LDC, so given as local files (see the header)"
text=$work/text refs=$work/refs
made=1  # (the LDC files are read for the text alone: a run that made it goes on without them)
for file in "$text"/{train,dev}.{zh,en} "$text"/nist0{3,4,5,6}.zh "$refs"/nist0{3,4,5,6}.ref{0,1,2,3}; do
  [ -e "$file" ] || made=0
done
if [ "$made" = 0 ]; then
  needed "$train_in" "NIST_TRAIN: the prefix of the training text, PREFIX.zh and PREFIX.en: $licensed"
  needed "$nist" "NIST_TEST: the folder of the NIST02-06 sets, nist02.zh, nist02.en0 .. en3, ...: $licensed"
  [ -z "$train_in" ] || input NIST_TRAIN "$train_in".{zh,en}
  [ -z "$nist" ] || input NIST_TEST "$nist"/nist0{2,3,4,5,6}.{zh,en0,en1,en2,en3}
fi
inputs_found
needs_python sacremoses "sacremoses (Moses' tokenizer) is not installed: pip install 'nmtkit[recipes]'"

stage "1. data: the LDC training text, NIST02 (dev), NIST03-06; English tokenised"
for dir in "$text" "$refs"; do [ -d "$dir" ] || step mkdir -p "$dir"; done
into "$text/train.zh" cat "$train_in.zh"
into "$text/train.en" moses tokenize en "$train_in.en"
into "$text/dev.zh" cat "$nist/nist02.zh"
into "$text/dev.en" moses tokenize en "$nist/nist02.en0"
for test in nist03 nist04 nist05 nist06; do
  into "$text/$test.zh" cat "$nist/$test.zh"
  for i in 0 1 2 3; do into "$refs/$test.ref$i" cat "$nist/$test.en$i"; done
  same_lines "$text/$test.zh" "$refs/$test.ref"{0,1,2,3}
done
for split in train dev; do same_lines "$text/$split.zh" "$text/$split.en"; done

bitatt_experiment nist zh en word:32000 4 nist03 nist04 nist05 nist06

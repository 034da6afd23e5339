# shellcheck shell=bash
# Shell functions the bench scripts share (source it after setting `here` and `data`), and recipes/lib.sh's: fresh DIR
# clears and makes anew a run folder that a bench script made (it holds the marker .nmtkit-workdir), and refuses any
# other, in one line.
# shellcheck source-path=SCRIPTDIR source=../recipes/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../recipes/lib.sh"

# the rnnsearch of ../shared/bench/PEERS.md (add --threads and --seed)
rnnsearch_peers=(--arch rnnsearch --emb-size 256 --enc-size 256 --dec-size 512 --dropout 0.2 --batch-size 64
                 --optimizer adam --lr 0.001 --clip-norm 1.0)

# tokenized13a DIR OUT [LANG...]: sacrebleu's 13a tokens of DIR/{train,dev,test}.LANG (default en and de), into OUT/
# (the word-level corpora)
tokenized13a() {
  local f l langs=("${@:3}")
  [ ${#langs[@]} -gt 0 ] || langs=(en de)
  mkdir -p "$2"
  for f in train dev test; do
    for l in "${langs[@]}"; do
      python -c "
import sys
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
tok = Tokenizer13a()
for line in sys.stdin:
    print(tok(line.rstrip('\n')))" < "$1/$f.$l" > "$2/$f.$l"
    done
  done
}

peak() { /usr/bin/time -f "%M" -o "$1" "${@:2}"; }  # peak resident memory (KB) of a command

# decode_one NAME INPUT REF OUT TRANSLATE-OPTION...: translate INPUT (batch 32, 2 threads) into OUT.de (with .mem
# and .log beside) and print NAME's speed, memory and BLEU against REF
decode_one() {
  local name=$1 input=$2 ref=$3 out=$4 start end
  start=$(date +%s.%N)
  peak "$out.mem" nmtkit translate "${@:5}" --batch-size 32 --threads 2 -i "$input" -o "$out.de" 2> "$out.log"
  end=$(date +%s.%N)
  python "$here/summarize.py" decode "$out.de" "$ref" "$out.mem" "$start" "$end" "$name" "$out.log"
}

# decode_test CHECKPOINT OUT PRECISION...: translate $data/test.en greedy and with beam 5 in each precision, into
# OUT<mode>.<precision>.de, and print speed, memory and BLEU
decode_test() {
  local checkpoint=$1 out=$2 precision mode name
  for precision in "${@:3}"; do
    for mode in "--greedy" "--beam 5"; do
      name=$(echo "$mode" | tr -d ' -').$precision
      # shellcheck disable=SC2086
      decode_one "$name" "$data/test.en" "$data/test.de" "$out$name" -m "$checkpoint" $mode --precision "$precision"
    done
  done
}

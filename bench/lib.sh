# Shell functions the bench scripts share (source it after setting `here` and `data`).

peak() { /usr/bin/time -f "%M" -o "$1" "${@:2}"; }  # peak resident memory (KB) of a command

# decode_test CHECKPOINT OUT PRECISION...: translate $data/test.en greedy and with beam 5 (batch 32, 2 threads) in
# each precision, into OUT<mode>.<precision>.de (with .mem and .log beside), and print speed, memory and BLEU
decode_test() {
  local checkpoint=$1 out=$2 precision mode name start end
  for precision in "${@:3}"; do
    for mode in "--greedy" "--beam 5"; do
      name=$(echo "$mode" | tr -d ' -').$precision
      start=$(date +%s.%N)
      peak "$out$name.mem" nmtkit translate -m "$checkpoint" $mode --batch-size 32 --threads 2 \
        --precision "$precision" -i "$data/test.en" -o "$out$name.de" 2> "$out$name.log"
      end=$(date +%s.%N)
      python "$here/summarize.py" decode "$out$name.de" "$data/test.de" "$out$name.mem" "$start" "$end" "$name" \
        "$out$name.log"
    done
  done
}

#!/usr/bin/env bash
# Interleaved A/B comparison of two nmtkit source trees on the same benchmark command, A B A B ...,
# so that a slow sitting of the shared machine hits both alike.
# Usage: bench/ab.sh A_TREE B_TREE ROUNDS COMMAND [ARGS...]
#   Each run puts a shim first on PATH whose `nmtkit` runs the tree's code (PYTHONPATH=TREE; Python 3.11+), and sets
#   RUNS=$AB_RUNS/{a,b} (default AB_RUNS=bench/runs/ab), so the benchmark keeps each tree's outputs apart.
#   Output of run K of tree X: $AB_RUNS/X.K.out.
# Example (the issue-12 check): bench/ab.sh /tmp/base . 2 bash bench/rnnsearch_lo_ende.sh speed
set -euo pipefail
a=$(cd "$1" && pwd); b=$(cd "$2" && pwd); rounds=$3; shift 3
out=${AB_RUNS:-$(cd "$(dirname "$0")" && pwd)/runs/ab}
mkdir -p "$out/a" "$out/b" "$out/shim-a" "$out/shim-b"
for x in a b; do
  tree=$([ $x = a ] && echo "$a" || echo "$b")
  # -P: the current folder does not go first on sys.path (a checkout's own nmtkit/ would shadow the tree's)
  printf '#!/usr/bin/env bash\nPYTHONPATH=%q exec python3 -P -c "import sys; from nmtkit.cli import main; sys.exit(main())" "$@"\n' \
    "$tree" > "$out/shim-$x/nmtkit"
  chmod +x "$out/shim-$x/nmtkit"
done
for x in a b; do  # which code each shim runs
  echo "tree $x: nmtkit from $(PATH="$out/shim-$x:$PATH" PYTHONPATH=$([ $x = a ] && echo "$a" || echo "$b") \
    python3 -P -c 'import nmtkit; print(nmtkit.__file__)')"
done
for round in $(seq 1 "$rounds"); do
  for x in a b; do
    echo "== round $round, tree $x ($([ $x = a ] && echo "$a" || echo "$b")), $(date +%H:%M:%S)"
    PATH="$out/shim-$x:$PATH" RUNS="$out/$x" "$@" | tee "$out/$x.$round.out"
  done
done

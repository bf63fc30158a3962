#!/bin/sh
# The fast-start cells in the simulator: 4 MB and 10 MB over 50 Mbit/s and
# 600 ms, first contact and resumed, both with early data, every loss rate
# and burst length of the long-delay table, seeds 1-10; one JSON line a run.
# usage: ./fast-start.sh ./target/release/ltx out.jsonl
ltx=$1
out=$2
: > "$out"
for size in 4MB 10MB; do
  for mode in first resume; do
    resume=""
    [ "$mode" = resume ] && resume=--resume
    for loss in 0 5 10 20 30 40 50; do
      for burst in 1 2 5 10; do
        [ "$loss" = 0 ] && [ "$burst" != 1 ] && continue
        for seed in 1 2 3 4 5 6 7 8 9 10; do
          "$ltx" sim run --early-data $resume --size $size --rtt 600ms --rate 50mbit \
            --loss "${loss}%" --burst $burst --seed $seed --json |
            python3 -c "import json, sys; d = json.load(sys.stdin); print(json.dumps(dict(size='$size', mode='$mode', loss=$loss, burst=$burst, seed=$seed, ratio=d['ratio'], t=d['completion_s'], ideal=d['ideal_s'], ok=d['verified'], overhead=d['overhead'])))" >> "$out"
        done
      done
    done
  done
done

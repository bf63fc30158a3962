#!/bin/sh
# Seed 000's two tables over seeds 1-10 (correlated 20 ms and long-delay
# 600 ms, 10 MB), and each long-delay cell at 100 MB; one JSON line a run.
# usage: ./every-seed.sh ./target/release/ltx
ltx=$1
for s in 1 2 3 4 5 6 7 8 9 10; do
  "$ltx" sim matrix seed --json --seed $s > seed-$s.jsonl
done
: > long-delay-100mb.jsonl
for s in 1 2 3 4 5 6 7 8 9 10; do
  for l in 0 5 10 20 30 40 50; do
    for b in 1 2 5 10; do
      [ $l = 0 ] && [ $b != 1 ] && continue
      "$ltx" sim run --rtt 600ms --rate 50mbit --size 100MB --loss $l% --burst $b --seed $s --json |
        python3 -c "import json, sys; d = json.load(sys.stdin); print(json.dumps(dict(loss=$l, burst=$b, seed=$s, ratio=d['ratio'], t=d['completion_s'], ok=d['verified'])))" >> long-delay-100mb.jsonl
    done
  done
done

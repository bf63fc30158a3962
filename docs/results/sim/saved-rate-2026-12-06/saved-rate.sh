#!/bin/sh
# Careful resume from a saved rate other than the path's (0.1 to 5 times it)
# against a first contact on the same path and seed: three paths, 0, 5 and
# 20 % loss, seeds 1-5; one JSON line a pair of runs.
# usage: ./saved-rate.sh ./target/release/ltx > runs.jsonl
ltx=$1
for path in "50mbit 600ms 4MB" "50mbit 20ms 4MB" "100mbit 40ms 10MB"; do
  set -- $path
  rate=$1 rtt=$2 size=$3
  for loss in 0 5 20; do
    for seed in 1 2 3 4 5; do
      args="--rate $rate --rtt $rtt --size $size --loss $loss% --seed $seed --json"
      first=$("$ltx" sim run $args)
      for factor in 0.1 0.25 0.5 1 2 5; do
        saved=$(python3 -c "print(round(${rate%mbit} * $factor * 1000))")kbit
        resumed=$("$ltx" sim run $args --resume --saved-rate "$saved")
        python3 -c "
import json, sys
first, resumed = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps(dict(rate='$rate', rtt='$rtt', size='$size', loss=$loss, seed=$seed,
    saved=$factor, first_s=first['completion_s'], resumed_s=resumed['completion_s'],
    ratio=round(resumed['completion_s'] / first['completion_s'], 4),
    ok=first['verified'] and resumed['verified'])))" "$first" "$resumed"
      done
    done
  done
done

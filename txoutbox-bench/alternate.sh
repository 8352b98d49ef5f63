#!/usr/bin/env bash
# Compares two builds of the benchmark in one run, alternating them round by round (A B, B A, A B, ...), each round a
# fresh JVM with its own embedded PostgreSQL and broker. Both trees must have been packaged first:
#   mvn -B -q -o -pl txoutbox-bench -am package -DskipTests      (in each tree)
#   txoutbox-bench/alternate.sh 6 /path/to/before /path/to/after -- drain --events 100000 --naive-events 0 ...
# Prints every contender's events/s per round and side, the medians, and after ÷ before per contender, plus the same
# for the relay's share of the raw producer measured in the same JVM (which cancels most of the machine's noise).
set -euo pipefail
[ $# -ge 4 ] && [ "$4" = "--" ] || { echo "usage: $0 <rounds> <tree-before> <tree-after> -- <bench command and options>" >&2; exit 2; }
rounds=$1 before=$2 after=$3
shift 4
out=$(mktemp -d)
for ((i = 0; i < rounds; i++)); do
    if ((i % 2 == 0)); then order="before after"; else order="after before"; fi
    for side in $order; do
        tree=$before
        [ "$side" = after ] && tree=$after
        echo "round $((i + 1))/$rounds: $side ($tree), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
        "$tree/txoutbox-bench/bench.sh" "$@" --rounds 1 > "$out/$side-$i.log" 2>&1 ||
            { echo "failed: $side round $((i + 1)); log: $out/$side-$i.log" >&2; exit 1; }
        # "round 1/1: <contender>: <n> events in <s> s = <rate> events/s[, WAL ...]"
        sed -n 's/.*round 1\/1: \(.*\): [0-9]* events in [0-9.]* s = \([0-9,.]*\) events\/s.*/\1|\2/p' \
            "$out/$side-$i.log" | tr -d ',' | sed "s/^/$side|$i|/" >> "$out/rates"
    done
done
awk -F'|' -v rounds="$rounds" '
    function median(arr, n,    i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
        return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    { rate[$1, $3, $2] = $4; names[$3] = 1; if ($3 ~ /^raw/) raw = $3 }
    END {
        for (c in names) {
            line = sprintf("%-40s", c)
            for (s = 0; s < 2; s++) {
                side = s ? "after" : "before"; n = 0
                for (i = 0; i < rounds; i++) if ((side, c, i) in rate) { v[++n] = rate[side, c, i]; line = line sprintf(" %s%d=%.0f", substr(side, 1, 1), i + 1, rate[side, c, i]) }
                med[side] = n ? median(v, n) : 0
            }
            printf "%s\n    median before %.0f, after %.0f, after/before %.3f\n", line, med["before"], med["after"], med["before"] ? med["after"] / med["before"] : 0
            if (raw != "" && c != raw) {
                for (s = 0; s < 2; s++) {
                    side = s ? "after" : "before"; n = 0
                    for (i = 0; i < rounds; i++) if ((side, c, i) in rate && (side, raw, i) in rate) v[++n] = rate[side, c, i] / rate[side, raw, i]
                    share[side] = n ? median(v, n) : 0
                }
                printf "    share of the raw producer: before %.3f, after %.3f, after/before %.3f\n", share["before"], share["after"], share["before"] ? share["after"] / share["before"] : 0
            }
        }
    }' "$out/rates"
echo "logs: $out" >&2

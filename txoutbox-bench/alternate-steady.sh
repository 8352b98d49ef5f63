#!/usr/bin/env bash
# Compares the steady-state latency of two builds in one run, alternating them round by round (A B, B A, ...), each
# round a fresh JVM. Both trees must have been packaged first (see alternate.sh):
#   txoutbox-bench/alternate-steady.sh 5 /path/to/before /path/to/after -- steady --rates 1000 --duration 30
# Prints every round's p50 and p99 per side (from the "steady <rate>: p50 X p99 Y" line of the first rate), the
# medians, and after ÷ before.
set -euo pipefail
[ $# -ge 4 ] && [ "$4" = "--" ] || { echo "usage: $0 <rounds> <tree-before> <tree-after> -- steady <options>" >&2; exit 2; }
rounds=$1 before=$2 after=$3
shift 4
out=$(mktemp -d)
for ((i = 0; i < rounds; i++)); do
    if ((i % 2 == 0)); then order="before after"; else order="after before"; fi
    for side in $order; do
        tree=$before
        [ "$side" = after ] && tree=$after
        echo "round $((i + 1))/$rounds: $side ($tree), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
        "$tree/txoutbox-bench/bench.sh" "$@" > "$out/$side-$i.log" 2>&1 ||
            { echo "failed: $side round $((i + 1)); log: $out/$side-$i.log" >&2; exit 1; }
        sed -n 's/.*steady [0-9]*: p50 \([0-9.]*\) p99 \([0-9.]*\) .*/\1 \2/p' "$out/$side-$i.log" | head -1 |
            sed "s/^/$side $i /" >> "$out/latencies"
    done
done
awk -v rounds="$rounds" '
    function median(arr, n,    i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
        return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    { p50[$1, ++n[$1]] = $3; p99[$1, n[$1]] = $4 }
    END {
        for (s = 0; s < 2; s++) {
            side = s ? "after" : "before"; line50 = ""; line99 = ""
            for (i = 1; i <= n[side]; i++) { a[i] = p50[side, i]; b[i] = p99[side, i]; line50 = line50 " " a[i]; line99 = line99 " " b[i] }
            m50[side] = median(a, n[side]); m99[side] = median(b, n[side])
            printf "%-6s p50 ms:%s (median %.1f); p99 ms:%s (median %.1f)\n", side, line50, m50[side], line99, m99[side]
        }
        printf "after/before: p50 %.3f, p99 %.3f\n", m50["after"] / m50["before"], m99["after"] / m99["before"]
    }' "$out/latencies"
echo "logs: $out" >&2

#!/usr/bin/env bash
# Runs a benchmark with the classpath Maven resolved at package time:
#   mvn -B -q -o -pl txoutbox-bench -am package -DskipTests
#   txoutbox-bench/bench.sh drain --events 200000 --rounds 3
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec java ${BENCH_JAVA_OPTS:--Xmx2g} -cp "$here/target/txoutbox-bench-0.1.0-SNAPSHOT.jar:$(cat "$here/target/classpath.txt")" \
    io.txoutbox.bench.Bench "$@"

#!/usr/bin/env bash
# Loads "ringflake serve" and prints a Markdown table of requests per second
# and latency percentiles (p50, p99, p99.9) per scenario: single IDs
# (/v1/id, and Meituan Leaf's /api/snowflake/get/{key}), batches
# (/v1/ids?n=1000, with IDs per second), and /healthz, which issues nothing,
# as the floor of the HTTP stack itself.
#
# Two loads:
#   - wrk, closed loop: each connection sends its next request when the last
#     is answered, so the server runs flat out; the figures are its
#     throughput and the latency at that throughput. wrk's --latency table
#     stops at p99; report.lua's done hook prints p99.9.
#   - serveload (benchmarks/serveload), paced: a request falls due every
#     1/rate, as Leaf's "50k QPS" load does, and its latency runs from when
#     it fell due (no coordinated omission).
#
# The server is pinned to CPU 0 with taskset, so the Go runtime sizes
# GOMAXPROCS to 1 and the server never has more than one core, and the load
# generator to CPU 1 (wrk with one thread; serveload spins on its CPU).
# Each scenario runs RUNS times (default 3) for DURATION each (default 10s);
# each column is the median of the runs, errors the worst run's.
#
# Needs Linux with 2 CPUs, taskset (util-linux) and Debian's wrk
# (apt-get install wrk). Run it on an otherwise idle machine: another
# process on either CPU shows up in the tail.
#
#   benchmarks/serve/run.sh                    # about 8 minutes
#   RUNS=1 DURATION=3s benchmarks/serve/run.sh # a quick look
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-3}
duration=${DURATION:-10s}
lua=benchmarks/serve/report.lua

for tool in wrk taskset; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (apt-get install wrk util-linux)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "run.sh: needs 2 CPUs, one for the server and one for the load; this machine has $(nproc)" >&2; exit 1; }

tmp=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/ringflake" ./cmd/ringflake
go build -o "$tmp/serveload" ./benchmarks/serveload
taskset -c 0 "$tmp/ringflake" serve --addr 127.0.0.1:0 --machine-id 1 --max-batch 1000 2>"$tmp/serve.log" &
server=$!
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/.*msg="ringflake: serving" addr=\([^ ]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "run.sh: the server did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }

# median of the numbers on stdin
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# field NAME from result lines on stdin
field() { sed -n "s/.*[ ]$1=\([0-9]*\).*/\1/p"; }
us() { awk '{ if ($1 >= 1000) printf "%.2f ms", $1/1000; else printf "%d µs", $1 }'; }

# row LABEL PATH LOAD IDS_PER_REQUEST: reads the runs' result lines from
# $tmp/runs and prints the table's row.
row() {
  local label=$1 path=$2 load=$3 per=$4 out="$tmp/runs"
  local rps p50 p99 p999 bad ids="–"
  rps=$(field rps <"$out" | median)
  p50=$(field p50 <"$out" | median | us)
  p99=$(field p99 <"$out" | median | us)
  p999=$(field p999 <"$out" | median | us)
  bad=$(sed -n 's/.* non2xx=\([0-9]*\) errors=\([0-9]*\).*/\1 \2/p' "$out" | awk '{ if ($1+$2 > m) m = $1+$2 } END { print m+0 }')
  [ "$per" -gt 0 ] && ids=$(awk -v r="$rps" -v n="$per" 'BEGIN { printf "%.3f M", r*n/1e6 }')
  printf '| %s | `%s` | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$path" "$load" \
    "$(awk -v r="$rps" 'BEGIN { printf "%.1f k", r/1e3 }')" "$ids" "$p50" "$p99" "$p999" "$bad"
}

# closed LABEL CONNECTIONS PATH IDS_PER_REQUEST: wrk, flat out.
closed() {
  : >"$tmp/runs"
  for _ in $(seq "$runs"); do
    taskset -c 1 wrk -t1 -c"$2" -d"$duration" --timeout 2s -s "$lua" "http://$addr$3" | grep '^result' >>"$tmp/runs"
  done
  row "$1" "$3" "wrk, $2 conns" "$4"
}

# paced LABEL RATE PATH IDS_PER_REQUEST: serveload at RATE requests/s.
paced() {
  : >"$tmp/runs"
  for _ in $(seq "$runs"); do
    taskset -c 1 "$tmp/serveload" -url "http://$addr$3" -rate "$2" -duration "$duration" >>"$tmp/runs"
  done
  row "$1" "$3" "paced, $(awk -v r="$2" 'BEGIN { printf "%g k/s", r/1e3 }')" "$4"
}

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -sr); $(go version | cut -d' ' -f3); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1,2)"
echo "server on CPU 0 (GOMAXPROCS 1), load on CPU 1; median of $runs runs of $duration each"
echo
echo '| scenario | path | load | requests/s | IDs/s | p50 | p99 | p99.9 | errors |'
echo '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |'
for c in 1 4 16 64; do
  closed "single ID" "$c" /v1/id 1
done
closed "single ID, Leaf's path" 16 /api/snowflake/get/bench 1
closed "batch of 1000" 2 "/v1/ids?n=1000" 1000
closed "batch of 1000" 8 "/v1/ids?n=1000" 1000
closed "no ID (/healthz)" 16 /healthz 0
paced "single ID" 50000 /v1/id 1
paced "single ID, Leaf's path" 50000 /api/snowflake/get/bench 1
paced "no ID (/healthz)" 50000 /healthz 0
paced "single ID" 80000 /v1/id 1
paced "batch of 1000" 2000 "/v1/ids?n=1000" 1000
paced "batch of 1000" 4000 "/v1/ids?n=1000" 1000

kill -TERM "$server"
wait "$server" || { echo "run.sh: the server exited with status $?" >&2; exit 1; }
server=""
echo
grep 'ringflake: stopped' "$tmp/serve.log"

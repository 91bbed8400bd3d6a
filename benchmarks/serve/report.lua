-- wrk's --latency table stops at p99; this prints one line per run with
-- p99.9 too, for run.sh to read. Latencies are in microseconds.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("result rps=%.0f p50=%d p99=%d p999=%d max=%d requests=%d non2xx=%d errors=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max,
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout))
end

// Package ringflakeclient hands out ringflake IDs from one or more
// "ringflake serve --grpc-addr" servers, for processes that should not hold
// a machine ID of their own: short-lived jobs, functions, or many small
// services.
//
// A [Client] keeps a local buffer of IDs: [Client.NextID] takes one from
// it, in tens of nanoseconds and without I/O, and waits only when the
// buffer is empty. A fill in the background keeps the buffer between a low
// and a high water mark ([WithWaterMarks]), asking whichever server is up
// for blocks of IDs over the Blocks stream.
//
// # Failover
//
// A server that fails a call, says it is not ready (UNAVAILABLE), or does
// not answer within the timeout ([WithTimeout]) is skipped: the fill asks
// another, and asks the skipped one again after a backoff that doubles up
// to a bound ([WithBackoff]), or after the delay the server's RetryInfo
// asks for. NextID fails only when every server has failed since it last
// answered, with an [*Error] naming each one and its failure.
//
// # Age
//
// No ID is handed out older than the maximum age ([WithMaxAge], default
// one second), judged on this process's clock against the time in the ID's
// layout, which the client reads from the servers (the Info call) or is
// given ([WithLayout]). Older IDs are dropped, never handed out, and
// counted in [Stats].Dropped. A buffer that holds more IDs than the
// process uses within the age drops the rest: lower the water marks for a
// slow consumer. Skew between this host's clock and a server's counts as
// age.
//
// # Order and uniqueness
//
// The IDs of one server increase, in the order the client hands them out.
// Across servers they are only roughly sorted by time: a block from one
// server may be handed out after a block from another that is up to the
// maximum age younger.
//
// The client never hands out one ID twice: each block the servers send is
// put into the buffer once and each ID taken out of it once; a stream that
// is opened again asks for new IDs, and a server never sends an ID twice.
// IDs from distinct servers are distinct as long as the servers share one
// ID space: leases from one store (--lease), or distinct fixed machine IDs,
// and one layout, which the client checks.
//
// A Client is safe for concurrent use.
package ringflakeclient

// Package ringflakeclient hands out ringflake IDs from one or more
// "ringflake serve --grpc-addr" servers, for processes that should not hold
// a machine ID of their own: short-lived jobs, functions, or many small
// services.
//
// A [Client] keeps a local buffer of IDs: [Client.NextID] takes one from
// it, in tens of nanoseconds and without I/O, and waits only when the
// buffer is empty. A fill in the background keeps the buffer stocked,
// asking whichever server is up for blocks of IDs over the Blocks stream.
//
// # The buffer
//
// The fill learns the rate at which the process takes IDs and aims to hold
// what it takes in half the maximum age, between a low and a high water
// mark ([WithWaterMarks]); it asks for more once the buffer, with what it
// has asked for, falls below half of that. A caller at a steady rate so
// has its IDs within half the maximum age of their fetch, and few age
// out; an idle one keeps about the low mark, and after an idle spell its
// next call drops what is left and waits for a fetch of the size its rate
// now needs.
//
// # Waits
//
// Calls that find the buffer empty wait in the order they came, and the
// IDs that arrive go to them first, one each. While callers wait, every
// server whose fill is free is asked, and a fetch that brings no block
// within a few times the servers' usual answer no longer counts as under
// way: a stopped server holds the callers back for about one answer of a
// live one, not for the timeout ([WithTimeout]).
//
// # Servers
//
// Each server is in one [State], in [Stats]: connecting until it first
// answers, ready, acquiring while it has no machine ID yet (it answers
// Info with none, or UNAVAILABLE with a RetryInfo), refused when it will
// not serve this client (another layout, not the service, no permission),
// or failing when it failed a call or did not answer within the timeout.
// A server that is not ready is asked again after a backoff that doubles up
// to a bound ([WithBackoff]), or after the delay its RetryInfo asks for.
//
// NextID waits, within its context, while a server is connecting or
// acquiring, as gRPC's wait-for-ready does: give it a deadline. It fails at
// once only when no server can serve, each one failing or refused (or, with
// [WithFailFast], not ready), with an [*Error] naming each and its failure.
//
// # Age
//
// No ID is handed out older than the maximum age ([WithMaxAge], default
// one second), judged on this process's clock against the time in the ID's
// layout, which the client reads from the servers (the Info call) or is
// given ([WithLayout]). Older IDs are dropped, never handed out, and
// counted in [Stats].Dropped; a server whose blocks are all older is
// failing. Skew between this host's clock and a server's counts as age.
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
// # Metrics
//
// [Client.Stats] gives the counters, a histogram of the waits and each
// server's state; the modules ringflakeprom (NewClientCollector) and
// ringflakeotel (RegisterClient) export them.
//
// A Client is safe for concurrent use.
package ringflakeclient

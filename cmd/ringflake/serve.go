package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ringflake/ringflake/cmd/ringflake/internal/grpcapi"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/logs"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/serve"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/startup"
)

// serveFlags holds the parsed flags of "ringflake serve".
type serveFlags struct {
	addr, grpcAddr  string
	maxBatch        int
	readTimeout     time.Duration
	writeTimeout    time.Duration
	idleTimeout     time.Duration
	shutdownTimeout time.Duration
	logFormat       string
	tls             serve.TLSFlags
	tlsConf         *tls.Config // from tls; nil for plaintext
	sourceFlags
}

// defaultAddr is loopback: without --tls-client-ca the service has no
// authentication, so it is reachable from other hosts only when --addr
// says so (:8080, say).
const defaultAddr = "127.0.0.1:8080"

// maxHeaderBytes bounds a request's header; the API's requests are a GET
// line and a few headers.
const maxHeaderBytes = 8 << 10

func parseServe(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", defaultAddr, "listen on `HOST:PORT`; the default is loopback only, as the API has no authentication but mutual TLS (:8080 for every interface; port 0 for any free one)")
	fs.StringVar(&f.grpcAddr, "grpc-addr", "", "also serve the gRPC API (ringflakeclient/ringflakepb), health and reflection on `HOST:PORT`; off by default")
	fs.IntVar(&f.maxBatch, "max-batch", serve.DefaultMaxBatch, fmt.Sprintf("the most IDs one /v1/ids request may ask for, `N` in 1..%d", serve.MaxBatchLimit))
	fs.DurationVar(&f.readTimeout, "read-timeout", 5*time.Second, "a connection's request, header included, must arrive within `D`")
	fs.DurationVar(&f.writeTimeout, "write-timeout", 10*time.Second, "an answer must be written within `D` of its request's header; more than --max-wait")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 60*time.Second, "close a kept-alive connection idle for `D`")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM or SIGINT, wait at most `D` for the requests in flight before closing their connections")
	fs.StringVar(&f.logFormat, "log-format", "text", "log records on stderr as `text` or json")
	f.tls.Register(fs)
	f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, usageError("serve: unexpected argument %q", fs.Arg(0))
	case f.maxBatch < 1 || f.maxBatch > serve.MaxBatchLimit:
		return f, usageError("serve: --max-batch = %d; want 1..%d", f.maxBatch, serve.MaxBatchLimit)
	case f.logFormat != "text" && f.logFormat != "json":
		return f, usageError("serve: --log-format = %q; want text or json", f.logFormat)
	case f.readTimeout <= 0 || f.idleTimeout <= 0 || f.shutdownTimeout <= 0:
		return f, usageError("serve: --read-timeout, --idle-timeout and --shutdown-timeout must be above 0")
	case f.writeTimeout <= f.effectiveMaxWait():
		return f, usageError("serve: --write-timeout = %v; want more than --max-wait (%v), which a request may wait", f.writeTimeout, f.effectiveMaxWait())
	}
	if err := f.check(fs); err != nil {
		return f, err
	}
	var err error
	if f.tlsConf, err = f.tls.Config(); err != nil {
		return f, usageError("serve: %v", err)
	}
	if f.lease.url == "" && !f.set["machine-id"] {
		// gen may default to machine 0 for a quick look; a service runs
		// beside others, and two on machine 0 would issue the same IDs.
		return f, usageError("serve: no machine ID: give --machine-id, or --lease to lease one; every service sharing an ID space needs its own")
	}
	return f, nil
}

// runServe serves the HTTP API, and with --grpc-addr the gRPC API beside
// it (internal/grpcapi), until SIGTERM or SIGINT. It listens first,
// answering /healthz at once and /readyz and the ID endpoints with 503 and
// the reason while it gets its machine ID, which it asks for again while
// the store cannot be reached or refuses the clock (startup.Retry); a
// signal meanwhile ends the wait at once, or a call to the store within
// New's grace, releases what was taken (at most startup.ReleaseTimeout)
// and returns nil. After a signal while
// serving it stops taking connections, lets the requests in flight finish
// (at most --shutdown-timeout), closes the generator, which releases a
// lease (at most startup.ReleaseTimeout), and returns nil, or the error of a
// drain that timed out or a release that failed.
func runServe(args []string, stderr io.Writer) error {
	f, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(logs.Filter(serve.LogHandler(f.logFormat, stderr), true)) // a mark wait under a second left out
	// The handler first: a signal at any point from here on stops the
	// process in order, releasing what it holds.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st := startup.New(ctx, f.sourceName())
	p, err := f.prepare(log, st)
	if err != nil {
		return err
	}
	var g *generator
	if !p.out.leased {
		// A plain fixed machine ID: New returns at once, and reports a
		// bad setting before anything is logged.
		if g, err = p.make(ctx); err != nil {
			return err
		}
	}
	// Listening before a lease's New reports a taken port before a lease
	// is taken, and answers /healthz while New waits.
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		p.out.done()
		return fmt.Errorf("serve: %w", err)
	}
	st.Clock = p.out.clock
	svc := serve.New(nil, serve.Config{MaxBatch: f.maxBatch, Layout: f.layout(), Starting: st.Status, Lease: st.LeaseReport})
	srv := &http.Server{
		Handler:           svc,
		ReadHeaderTimeout: f.readTimeout,
		ReadTimeout:       f.readTimeout,
		WriteTimeout:      f.writeTimeout,
		IdleTimeout:       f.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serve.Listener(ln, f.tlsConf)) }()
	gs, grpcAddr, err := grpcapi.Listen(f.grpcAddr, svc, f.tlsConf)
	if err != nil {
		_ = srv.Close()
		p.out.done()
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("ringflake: listening", "addr", ln.Addr().String(), "grpc_addr", grpcAddr, "tls", f.tlsConf != nil, "mutual_tls", f.tls.ClientCA != "", "source", f.sourceName())

	began := time.Now()
	if g == nil {
		// Until a signal, serve stays up through a store it cannot reach
		// or that refuses its clock, unready, saying why on /readyz: on
		// Kubernetes an exit would make a blip of the store a crash loop.
		// Only bad settings end it.
		g, err = startup.Retry(st, log, func() (*generator, error) { return p.start(st) },
			func(err error) bool { return errors.Is(err, errUsage) })
	}
	if err != nil {
		_ = srv.Close()
		p.out.done()
		gs.Close()
		if !errors.Is(err, startup.ErrInterrupted) {
			return err
		}
		attrs := []any{"took", time.Since(began).Round(time.Millisecond), "issued", 0}
		if p.out.leased {
			attrs = append(attrs, "released", err == startup.ErrInterrupted)
		}
		log.Info("ringflake: stopped before serving", attrs...)
		if err != startup.ErrInterrupted {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
	defer g.done()
	defer g.Close() // a no-op after shutdown's Close
	svc.Ready(g.Generator)
	log.Info("ringflake: serving", "addr", ln.Addr().String(), "grpc_addr", grpcAddr, "machine", g.Lease().ID, "source", g.source, "max_batch", f.maxBatch)

	select {
	case err := <-served: // Serve failed before any signal
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal kills the process, as it would without this handler
	return shutdown(srv, gs, g, log, f.shutdownTimeout)
}

// shutdown stops srv and gs taking connections, waits at most timeout for
// the requests and calls in flight, then closes the generator, which releases a lease
// (at most startup.ReleaseTimeout), and logs that it stopped. It returns an error
// if requests were still running at the timeout or the lease could not be
// released.
func shutdown(srv *http.Server, gs *grpcapi.Server, g *generator, log *slog.Logger, timeout time.Duration) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	grpcErr := make(chan error, 1)
	go func() { grpcErr <- gs.Stop(ctx) }()               // the gRPC calls drain beside the HTTP requests
	drainErr := errors.Join(srv.Shutdown(ctx), <-grpcErr) // closes the listeners, waits for the requests in flight
	if drainErr != nil {
		_ = srv.Close() // cuts the connections still busy
	}
	issued := g.Stats().Issued
	deadline := time.NewTimer(startup.ReleaseTimeout)
	defer deadline.Stop()
	closeErr := startup.Within(g.Close, deadline.C) // a handler still running after a drain that timed out gets ErrClosed
	attrs := []any{"drained", drainErr == nil, "took", time.Since(start).Round(time.Millisecond), "issued", issued}
	if g.leased {
		attrs = append(attrs, "released", closeErr == nil)
	}
	log.Info("ringflake: stopped", attrs...)
	switch {
	case drainErr != nil:
		return fmt.Errorf("serve: requests still running after --shutdown-timeout %v; their connections were closed", timeout)
	case closeErr != nil:
		return fmt.Errorf("serve: releasing the machine ID's lease: %w", closeErr)
	}
	return nil
}

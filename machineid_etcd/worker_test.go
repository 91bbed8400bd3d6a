package machineid_etcd_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
)

// The process tests re-run this test binary as workers: a worker makes a
// ringflake generator on an etcd lease and issues IDs until SIGTERM,
// appending each batch to a file as 8-byte big-endian IDs, so that a batch
// is on disk before the next one is issued. On stdout it prints one line
// per event: "started <machine>", "error <class> <message>", "closed
// <error>". class is "lost" (ringflake.ErrLeaseLost), "mark"
// (ringflake.ErrMarkAhead), "new" (New failed with an expected cause) or
// "BAD" (anything else).
const (
	workerOut       = "MACHINEID_ETCD_WORKER_OUT" // the IDs file; set only in workers
	workerEndpoints = "MACHINEID_ETCD_WORKER_ENDPOINTS"
	workerRange     = "MACHINEID_ETCD_WORKER_RANGE" // "lo-hi"
)

func TestMain(m *testing.M) {
	if out := os.Getenv(workerOut); out != "" {
		os.Exit(work(out))
	}
	os.Exit(m.Run())
}

// work is a worker's main.
func work(out string) int {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Printf("error BAD %v\n", err)
		return 1
	}
	defer f.Close()
	var lo, hi int64
	if _, err := fmt.Sscanf(os.Getenv(workerRange), "%d-%d", &lo, &hi); err != nil {
		fmt.Printf("error BAD range: %v\n", err)
		return 1
	}
	client, err := clientv3.New(clientConfig(strings.Split(os.Getenv(workerEndpoints), ",")))
	if err != nil {
		fmt.Printf("error BAD %v\n", err)
		return 1
	}
	defer client.Close()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	gen := startGenerator(client, lo, hi, term)
	if gen == nil {
		return 0
	}
	ids := make([]ringflake.ID, 16)
	buf := make([]byte, 8*len(ids))
	for {
		select {
		case <-term:
			fmt.Printf("closed %v\n", gen.Close())
			return 0
		default:
		}
		n, err := gen.NextN(ids)
		for i, id := range ids[:n] {
			binary.BigEndian.PutUint64(buf[8*i:], uint64(id))
		}
		if _, werr := f.Write(buf[:8*n]); werr != nil {
			fmt.Printf("error BAD %v\n", werr)
			return 1
		}
		if err != nil {
			fmt.Printf("error %s %v\n", classify(err), err)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
}

// startGenerator makes the worker's generator, with a new Holder for each
// try, until it succeeds or SIGTERM comes (nil).
func startGenerator(client *clientv3.Client, lo, hi int64, term <-chan os.Signal) *ringflake.Generator {
	for {
		l, err := machineid_etcd.New(client, machineid.WithTTL(ttl), machineid.WithRange(lo, hi))
		if err != nil {
			fmt.Printf("error BAD %v\n", err)
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		gen, err := ringflake.New(ctx, ringflake.WithMachineIDSource(l), ringflake.WithMaxWait(100*time.Millisecond))
		cancel()
		if err == nil {
			fmt.Printf("started %d\n", gen.Lease().ID)
			return gen
		}
		class := "new"
		if !errors.Is(err, machineid.ErrExhausted) && !errors.Is(err, ringflake.ErrMarkAhead) &&
			!errors.Is(err, ringflake.ErrLeaseLost) && !errors.Is(err, context.DeadlineExceeded) {
			class = "BAD"
		}
		fmt.Printf("error %s %v\n", class, err)
		select {
		case <-term:
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// classify names the kind of a NextN error.
func classify(err error) string {
	switch {
	case errors.Is(err, ringflake.ErrLeaseLost):
		return "lost"
	case errors.Is(err, ringflake.ErrMarkAhead):
		return "mark"
	}
	return "BAD"
}

// workerEnv returns the environment of a worker writing to out.
func workerEnv(out string, endpoints []string, lo, hi int64) []string {
	return append(os.Environ(),
		workerOut+"="+out,
		workerEndpoints+"="+strings.Join(endpoints, ","),
		workerRange+"="+strconv.FormatInt(lo, 10)+"-"+strconv.FormatInt(hi, 10),
	)
}

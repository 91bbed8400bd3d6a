// Command clientload measures ringflakeclient against "ringflake serve"
// processes built from the tree, over loopback, for benchmarks/README.md:
//
//   - the cost of a NextID served from the client's buffer, in ns;
//   - the IDs a second one client takes flat out, from one server and two;
//   - a batch of IDs over HTTP (/v1/ids) and over gRPC (NextIDs), one call
//     at a time, of the same size;
//   - the longest time one NextID takes while a server is killed
//     (SIGKILL) or stopped (SIGSTOP), against two servers, beside the
//     longest without either.
//
// Each figure is the median of -rounds rounds. Run it from the root of a
// clone (it builds ./cmd/ringflake):
//
//	go run ./benchmarks/clientload -rounds 5
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/ringflake/ringflake/ringflakeclient"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds of each measurement; each figure is their median")
	window := flag.Duration("window", 2*time.Second, "how long each throughput and stall round runs")
	batch := flag.Int("batch", 1000, "the batch size of the HTTP and gRPC comparison")
	flag.Parse()
	if err := run(*rounds, *window, *batch); err != nil {
		fmt.Fprintln(os.Stderr, "clientload:", err)
		os.Exit(1)
	}
}

// proc is one serve process.
type proc struct {
	cmd        *exec.Cmd
	http, grpc string
}

// serve starts the binary on machine ID id, and returns once it serves.
func serve(bin, state string, id int) (*proc, error) {
	cmd := exec.Command(bin, "serve", "--machine-id", strconv.Itoa(id), "--state-dir", state, "--addr", "127.0.0.1:0",
		"--grpc-addr", "127.0.0.1:0", "--log-format", "json", "--max-batch", "4096")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var rec struct {
			Msg, Addr string
			GRPCAddr  string `json:"grpc_addr"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "ringflake: serving" {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return &proc{cmd: cmd, http: rec.Addr, grpc: rec.GRPCAddr}, nil
		}
	}
	_ = cmd.Wait()
	return nil, fmt.Errorf("serve on machine %d exited before serving", id)
}

func (p *proc) kill() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

func run(rounds int, window time.Duration, batch int) error {
	dir, err := os.MkdirTemp("", "clientload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "ringflake")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/ringflake").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/ringflake (run this from the root of a clone): %v: %s", err, out)
	}
	next := 1
	start := func() (*proc, error) { next++; return serve(bin, filepath.Join(dir, "state"), next) }
	a, err := start()
	if err != nil {
		return err
	}
	defer a.kill()
	b, err := start()
	if err != nil {
		return err
	}
	defer b.kill()

	fmt.Printf("rounds %d, window %v, GOMAXPROCS %d\n", rounds, window, runtime.GOMAXPROCS(0))
	ns := median(rounds, func() float64 { return buffered(a.grpc) })
	fmt.Printf("buffered NextID: %.1f ns\n", ns)
	one := median(rounds, func() float64 { return sustained([]string{a.grpc}, window) })
	two := median(rounds, func() float64 { return sustained([]string{a.grpc, b.grpc}, window) })
	fmt.Printf("sustained, one client: 1 server %.2f M IDs/s, 2 servers %.2f M IDs/s (x%.2f)\n", one/1e6, two/1e6, two/one)
	h := median(rounds, func() float64 { return httpBatches(a.http, batch, window) })
	g := median(rounds, func() float64 { return grpcBatches(a.grpc, batch, window) })
	fmt.Printf("batch of %d, one call at a time: HTTP %.0f calls/s, gRPC %.0f calls/s (gRPC/HTTP x%.2f)\n", batch, h, g, g/h)

	for _, sig := range []syscall.Signal{0, syscall.SIGKILL, syscall.SIGSTOP} {
		stall := median(rounds, func() float64 {
			victim, err := start()
			if err != nil {
				fmt.Fprintln(os.Stderr, "clientload:", err)
				return 0
			}
			defer victim.kill()
			return longestStall([]string{victim.grpc, a.grpc}, victim, sig, window)
		})
		name := map[syscall.Signal]string{0: "no server stopped", syscall.SIGKILL: "one of two killed (SIGKILL)", syscall.SIGSTOP: "one of two stopped (SIGSTOP)"}[sig]
		fmt.Printf("longest NextID, %s: %.2f ms\n", name, stall*1e3)
	}
	return nil
}

// newClient is a client of targets with marks for throughput.
func newClient(targets []string) (*ringflakeclient.Client, error) {
	return ringflakeclient.New(context.Background(), targets,
		ringflakeclient.WithWaterMarks(16384, 65536), ringflakeclient.WithBlock(4096))
}

// buffered is the ns per NextID over 50,000 calls from a full buffer.
func buffered(target string) float64 {
	const n = 50000
	c, err := ringflakeclient.New(context.Background(), []string{target}, ringflakeclient.WithWaterMarks(1000, 60000), ringflakeclient.WithBlock(4096))
	if err != nil {
		return 0
	}
	defer c.Close()
	for c.Stats().Buffered < 60000 {
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	began := time.Now()
	for range n {
		if _, err := c.NextID(ctx); err != nil {
			return 0
		}
	}
	return float64(time.Since(began).Nanoseconds()) / n
}

// sustained is the IDs a second one goroutine takes flat out for window.
func sustained(targets []string, window time.Duration) float64 {
	c, err := newClient(targets)
	if err != nil {
		return 0
	}
	defer c.Close()
	ctx := context.Background()
	n := 0
	began := time.Now()
	for time.Since(began) < window {
		for range 1000 {
			if _, err := c.NextID(ctx); err != nil {
				return 0
			}
		}
		n += 1000
	}
	return float64(n) / time.Since(began).Seconds()
}

// httpBatches is GET /v1/ids?n=batch calls a second, one at a time, the
// answer read and decoded.
func httpBatches(addr string, batch int, window time.Duration) float64 {
	url := fmt.Sprintf("http://%s/v1/ids?n=%d", addr, batch)
	n := 0
	began := time.Now()
	for time.Since(began) < window {
		resp, err := http.Get(url)
		if err != nil {
			return 0
		}
		var body struct{ IDs []json.Number }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || len(body.IDs) != batch {
			return 0
		}
		n++
	}
	return float64(n) / time.Since(began).Seconds()
}

// grpcBatches is NextIDs(n=batch) calls a second, one at a time.
func grpcBatches(addr string, batch int, window time.Duration) float64 {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0
	}
	defer conn.Close()
	api := pb.NewIDsClient(conn)
	n := 0
	began := time.Now()
	for time.Since(began) < window {
		r, err := api.NextIDs(context.Background(), &pb.NextIDsRequest{N: uint32(batch)})
		if err != nil || len(r.GetIds()) != batch {
			return 0
		}
		n++
	}
	return float64(n) / time.Since(began).Seconds()
}

// longestStall is the longest NextID, in seconds, of one goroutine taking
// IDs flat out from a client of targets for window, victim sent sig (0:
// none) a third of the way in. Default marks and timeout.
func longestStall(targets []string, victim *proc, sig syscall.Signal, window time.Duration) float64 {
	c, err := ringflakeclient.New(context.Background(), targets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientload:", err)
		return 0
	}
	defer c.Close()
	if sig != 0 {
		t := time.AfterFunc(window/3, func() { _ = victim.cmd.Process.Signal(sig) })
		defer t.Stop()
		if sig == syscall.SIGSTOP {
			defer func() { _ = victim.cmd.Process.Signal(syscall.SIGCONT) }()
		}
	}
	ctx := context.Background()
	var longest time.Duration
	began := time.Now()
	for time.Since(began) < window {
		t := time.Now()
		if _, err := c.NextID(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "clientload: NextID:", err)
			return 0
		}
		longest = max(longest, time.Since(t))
	}
	return longest.Seconds()
}

func median(rounds int, f func() float64) float64 {
	v := make([]float64, rounds)
	for i := range v {
		v[i] = f()
	}
	slices.Sort(v)
	return v[len(v)/2]
}

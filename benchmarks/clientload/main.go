// Command clientload measures ringflakeclient against "ringflake serve"
// processes built from the tree, over loopback, for benchmarks/README.md:
//
//   - the cost of a NextID served from the client's buffer, in ns;
//   - the IDs a second one client takes flat out, from one server and two;
//   - a batch of IDs over HTTP (/v1/ids) and over gRPC (NextIDs), one call
//     at a time, of the same size;
//   - the longest time one NextID takes while a server is killed
//     (SIGKILL) or stopped (SIGSTOP), against two servers, beside the
//     longest without either;
//   - the p99.9 and the longest NextID of 8 goroutines flat out against
//     three servers, with none stopped and with one stopped (SIGSTOP) for
//     most of the window, and the longest wait the client counted;
//   - what a caller at 2,000 IDs a second has served, fetched and dropped,
//     with the default options.
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
	for _, sig := range []syscall.Signal{0, syscall.SIGSTOP} {
		var p999, longest, waited []float64
		for range rounds {
			victim, err := start()
			if err != nil {
				return err
			}
			w, err := manyCallers([]string{a.grpc, victim.grpc, b.grpc}, victim, sig, window)
			victim.kill()
			if err != nil {
				return err
			}
			p999, longest, waited = append(p999, w.p999), append(longest, w.longest), append(waited, w.waited)
		}
		name := map[syscall.Signal]string{0: "none stopped", syscall.SIGSTOP: "one of three stopped (SIGSTOP)"}[sig]
		fmt.Printf("8 goroutines, %s: p99.9 %.3f ms, longest %.2f ms, longest wait for IDs %.2f ms\n",
			name, mid(p999)*1e3, mid(longest)*1e3, mid(waited)*1e3)
	}
	var served, fetched, dropped []float64
	for range rounds {
		s, err := paced(a.grpc, 2000, window)
		if err != nil {
			return err
		}
		served, fetched, dropped = append(served, float64(s.Served)), append(fetched, float64(s.Fetched)), append(dropped, float64(s.Dropped))
	}
	fmt.Printf("2,000 IDs/s for %v, default options: %.0f served, %.0f fetched, %.0f dropped\n", window, mid(served), mid(fetched), mid(dropped))
	return nil
}

// callers is what manyCallers measured, in seconds.
type callers struct{ p999, longest, waited float64 }

// manyCallers runs 8 goroutines taking IDs flat out from a client of
// targets (default options) for window, victim sent sig (0: none) a
// sixth of the way in and continued at five sixths; it gives the p99.9
// and the longest NextID the callers timed, and the longest wait for IDs
// the client counted.
func manyCallers(targets []string, victim *proc, sig syscall.Signal, window time.Duration) (callers, error) {
	c, err := ringflakeclient.New(context.Background(), targets)
	if err != nil {
		return callers{}, err
	}
	defer c.Close()
	if sig != 0 {
		t := time.AfterFunc(window/6, func() { _ = victim.cmd.Process.Signal(sig) })
		defer t.Stop()
		cont := time.AfterFunc(5*window/6, func() { _ = victim.cmd.Process.Signal(syscall.SIGCONT) })
		defer cont.Stop()
	}
	took := make([][]time.Duration, 8)
	errs := make(chan error, len(took))
	end := time.Now().Add(window)
	for i := range took {
		go func() {
			ctx := context.Background()
			for time.Now().Before(end) {
				began := time.Now()
				if _, err := c.NextID(ctx); err != nil {
					errs <- err
					return
				}
				took[i] = append(took[i], time.Since(began))
			}
			errs <- nil
		}()
	}
	for range took {
		if err := <-errs; err != nil {
			return callers{}, fmt.Errorf("NextID: %w", err)
		}
	}
	all := slices.Concat(took...)
	slices.Sort(all)
	return callers{p999: all[len(all)*999/1000].Seconds(), longest: all[len(all)-1].Seconds(),
		waited: c.Stats().Waits.Longest.Seconds()}, nil
}

// paced takes rate IDs a second from a client of target (default options)
// for window, in steps of 2 ms, and gives the client's Stats.
func paced(target string, rate int, window time.Duration) (ringflakeclient.Stats, error) {
	c, err := ringflakeclient.New(context.Background(), []string{target})
	if err != nil {
		return ringflakeclient.Stats{}, err
	}
	defer c.Close()
	const step = 2 * time.Millisecond
	per := rate * int(step) / int(time.Second)
	ctx := context.Background()
	next := time.Now()
	for end := next.Add(window); next.Before(end); next = next.Add(step) {
		for range per {
			if _, err := c.NextID(ctx); err != nil {
				return ringflakeclient.Stats{}, err
			}
		}
		time.Sleep(time.Until(next.Add(step)))
	}
	return c.Stats(), nil
}

// mid is the median of v.
func mid(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// newClient is a client of targets with marks for throughput.
func newClient(targets []string) (*ringflakeclient.Client, error) {
	return ringflakeclient.New(context.Background(), targets,
		ringflakeclient.WithWaterMarks(16384, 65536), ringflakeclient.WithBlock(4096))
}

// buffered is the ns per NextID over 50,000 calls from a full buffer.
func buffered(target string) float64 {
	const n = 50000
	c, err := ringflakeclient.New(context.Background(), []string{target}, ringflakeclient.WithWaterMarks(60000, 60000), ringflakeclient.WithBlock(4096))
	if err != nil {
		return 0
	}
	defer c.Close()
	for c.Stats().Buffered < 60000 { // the low mark: the least the fill keeps
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

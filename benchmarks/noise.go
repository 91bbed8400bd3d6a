package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// hogEnv marks a child process started by startHogs.
const hogEnv = "RINGFLAKE_BENCH_HOG"

// hogLimit ends a hog that its parent forgot.
const hogLimit = 5 * time.Minute

// runHogIfChild turns this process into a CPU hog if it was started as one:
// it spins on one thread until its standard input closes (the parent
// stopped it, or died), then exits. It returns if this is not a hog.
func runHogIfChild() {
	if os.Getenv(hogEnv) != "1" {
		return
	}
	runtime.GOMAXPROCS(1)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	end := time.Now().Add(hogLimit)
	for i := 0; ; i++ {
		if i%(1<<20) == 0 && time.Now().After(end) {
			os.Exit(0)
		}
	}
}

// hogs are other processes that keep every core busy, as neighbours on a
// shared machine do: the kernel then preempts the benchmark's threads at
// arbitrary points, including while one holds a lock.
type hogs struct {
	cmds  []*exec.Cmd
	pipes []io.WriteCloser
}

// startHogs starts n hog processes, each a copy of this program.
func startHogs(n int) (*hogs, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting CPU hogs: %w", err)
	}
	h := &hogs{}
	for range n {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), hogEnv+"=1")
		in, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			h.stop()
			return nil, fmt.Errorf("starting CPU hogs: %w", err)
		}
		h.cmds, h.pipes = append(h.cmds, cmd), append(h.pipes, in)
	}
	return h, nil
}

// stop ends the hogs and waits for them.
func (h *hogs) stop() {
	for _, p := range h.pipes {
		p.Close()
	}
	for _, c := range h.cmds {
		c.Wait()
	}
}

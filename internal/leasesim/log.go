package leasesim

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// eventLog keeps the latest events of a world, for the replay of a failing
// seed: what led to the failure. Verbose, it keeps every event, and the
// issues too. Safe for concurrent use.
type eventLog struct {
	start   time.Time // the world's start, in virtual time
	verbose bool

	mu     sync.Mutex // protects the fields below
	events []event    // a ring of the latest keep events, or all of them when verbose
	next   int
}

type event struct {
	at   time.Duration
	who  string
	what string
}

// keep is how many events a quiet log keeps.
const keep = 400

// add records what who did, now.
func (l *eventLog) add(who, format string, a ...any) {
	e := event{at: time.Since(l.start), who: who, what: strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", "; ")}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.verbose || len(l.events) < keep {
		l.events = append(l.events, e)
		return
	}
	l.events[l.next] = e
	l.next = (l.next + 1) % keep
}

// write prints the events kept, oldest first.
func (l *eventLog) write(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.events {
		e := l.events[(l.next+i)%len(l.events)]
		fmt.Fprintf(w, "%12.6fs  %-6s %s\n", e.at.Seconds(), e.who, e.what)
	}
}

package machineid_zookeeper

import (
	"net"
	"sync"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// NewCuttable is New, with connections that cut closes, and that fail to
// dial after it: the Holder's sessions then hear nothing more from it, as
// after a crash or a network cut, and ZooKeeper expires them.
func NewCuttable(servers []string, opts ...machineid.Option) (h *machineid.Holder, cut func(), err error) {
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  bool
	)
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errCut}
		}
		c, err := net.DialTimeout(network, addr, timeout)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	cut = func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		for _, c := range conns {
			_ = c.Close()
		}
	}
	h, err = newHolder(servers, dialer, opts)
	return h, cut, err
}

type cutError struct{}

func (cutError) Error() string { return "the test cut this holder off" }

var errCut = cutError{}

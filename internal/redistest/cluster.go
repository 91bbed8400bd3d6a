package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of three masters, each a [Server], with the
// slots split evenly and no replicas.
type Cluster struct {
	Nodes []*Server
}

// Addrs returns the nodes' addresses, for a ClusterClient's seed list.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// StartCluster starts three cluster-enabled servers, assigns the 16384
// slots with CLUSTER ADDSLOTSRANGE, joins them with CLUSTER MEET and waits
// until every node reports cluster_state:ok.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bin := binary(tb)
	c := &Cluster{}
	for len(c.Nodes) < 3 {
		port := freePort(tb, true)
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, tb: tb, dir: tb.TempDir(), extra: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
		}}
		if err := s.start(bin); err != nil {
			tb.Logf("redistest: retrying a cluster node: %v", err)
			continue
		}
		tb.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
	}
	const slots = 16384
	for i, n := range c.Nodes {
		lo, hi := i*slots/3, (i+1)*slots/3-1
		n.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi))
	}
	for _, n := range c.Nodes[1:] {
		c.Nodes[0].Do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(n.Port))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		for !strings.Contains(n.Do("CLUSTER", "INFO"), "cluster_state:ok") || !knowsAll(n) {
			if time.Now().After(deadline) {
				tb.Fatalf("redistest: cluster did not reach cluster_state:ok within 30s; node %s says:\n%s", n.Addr, n.Do("CLUSTER", "INFO"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// knowsAll reports whether n sees all three masters connected.
func knowsAll(n *Server) bool {
	return strings.Contains(n.Do("CLUSTER", "INFO"), "cluster_known_nodes:3") &&
		strings.Contains(n.Do("CLUSTER", "INFO"), "cluster_slots_assigned:16384")
}

package machineid_etcd_test

import (
	"context"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
)

// A generator on an etcd lease: it takes the lowest free machine ID,
// follows the lease, and releases it on Close. It needs a running etcd, so
// it has no output to check.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	holder, err := machineid_etcd.New(client, machineid.WithTTL(10*time.Second), machineid.WithRange(0, 1023))
	if err != nil {
		log.Fatal(err)
	}
	gen, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(holder))
	if err != nil {
		log.Fatal(err) // etcd unreachable, every ID held, ...
	}
	defer gen.Close() // releases the lease
	id, err := gen.NextID()
	if err != nil {
		log.Fatal(err) // ringflake.ErrLeaseLost while etcd cannot confirm the lease
	}
	fmt.Println(id)
}

// New refuses an option out of range, before contacting etcd: etcd counts
// lease TTLs in whole seconds.
func ExampleNew_invalid() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	_, err = machineid_etcd.New(client, machineid.WithTTL(1500*time.Millisecond))
	fmt.Println(err)
	// Output:
	// ringflake: invalid configuration: TTL = 1.5s; valid: a whole number of 1s
}

// Holders share machine IDs when they share a key prefix; give each ID
// space a prefix of its own. An empty one means the default.
func ExampleWithPrefix() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	_, err = machineid_etcd.New(client, machineid_etcd.WithPrefix("orders/machineid/"))
	fmt.Println(err)
	_, err = machineid_etcd.New(client, machineid_etcd.WithPrefix(""))
	fmt.Println(err)
	// Output:
	// <nil>
	// <nil>
}

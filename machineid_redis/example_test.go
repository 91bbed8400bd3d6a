package machineid_redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// A generator whose machine ID is leased from Redis. It needs a server, so
// there is no output to check.
func ExampleNew() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer client.Close()
	svc, err := mr.New(client, machineid.WithRange(0, ringflake.DefaultLayout().MaxMachine()), machineid.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	// New waits, within its context (30 s without a deadline), until the
	// clock has passed the mark the ID inherited (up to TTL + 2 s on a
	// Redis that just started) and, if every ID is held, for one to free.
	g, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(svc))
	if err != nil {
		log.Fatal(err) // for example: all IDs in the range were held until the deadline, or the clock is off Redis's
	}
	defer g.Close() // releases the lease
	id, err := g.NextID()
	if err != nil {
		// For example a lost lease, with its cause:
		// machineid: lease lost: no renewal of machine ID 0 was confirmed
		// within TTL 10s − safety margin 2s of the last; the latest call:
		// machineid_redis: renewing machine ID 0: ...
		log.Print(err)
	}
	fmt.Println(id)
}

// The seed's mapping from host IP to machine ID, with its keys.
func ExampleWithHostMapping() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	svc, err := mr.New(client, mr.WithPrefix("myapp:"), mr.WithHostMapping("10.0.0.5"))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(svc))
	if err != nil {
		log.Fatal(err) // for example: another process on 10.0.0.5 holds its ID
	}
	defer g.Close()
}

// A prefix without a hash tag is refused on a Cluster client.
func ExampleWithPrefix() {
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000"}})
	defer client.Close()
	_, err := mr.New(client, mr.WithPrefix("ids:"))
	fmt.Println(err)
	// Output:
	// ringflake: invalid configuration: prefix = "ids:"; valid: one with a hash tag, such as "{ids}:": Lua scripts need every key in one Cluster slot
}

// A TTL outside Redis's bounds is refused with ringflake's sentinel.
func Example_ttlBounds() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	_, err := mr.New(client, machineid.WithTTL(100*time.Hour))
	fmt.Println(err)
	fmt.Println(errors.Is(err, ringflake.ErrInvalidConfig))
	// Output:
	// ringflake: invalid configuration: TTL = 100h0m0s; valid: 1s..5m0s
	// true
}

package machineid_redis_test

import (
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// A generator whose machine ID is leased from Redis. It needs a server, so
// there is no output to check.
func ExampleNewLeased() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer client.Close()
	svc, err := mr.NewLeased(client, mr.WithRange(0, ringflake.DefaultLayout().MaxMachine()), mr.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(ringflake.WithMachineIDService(svc))
	if err != nil {
		log.Fatal(err) // for example: all IDs in the range are leased
	}
	defer g.Close() // releases the lease
	id, err := g.NextID()
	fmt.Println(id, err)
}

// The seed's mapping from host IP to machine ID, with its keys.
func ExampleNewHostMapped() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	svc, err := mr.NewHostMapped(client, mr.WithPrefix("myapp:"), mr.WithHost("10.0.0.5"))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(ringflake.WithMachineIDService(svc))
	if err != nil {
		log.Fatal(err) // for example: another process on 10.0.0.5 holds its ID
	}
	defer g.Close()
}

// A prefix without a hash tag is refused on a Cluster client.
func ExampleWithPrefix() {
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000"}})
	defer client.Close()
	_, err := mr.NewLeased(client, mr.WithPrefix("ids:"))
	fmt.Println(err)
	// Output:
	// machineid_redis: invalid configuration: prefix "ids:" has no hash tag; Lua scripts need every key in one Cluster slot, so use one like "{ids}:"
}

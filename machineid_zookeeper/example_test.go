package machineid_zookeeper_test

import (
	"errors"
	"fmt"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mz "github.com/ringflake/ringflake/machineid_zookeeper"
)

// New checks its arguments before it contacts ZooKeeper.
func ExampleNew_invalid() {
	_, err := mz.New([]string{"127.0.0.1:2181"}, mz.WithPrefix("machineid"))
	fmt.Println(errors.Is(err, ringflake.ErrInvalidConfig))
	fmt.Println(err)
	_, err = mz.New(nil, machineid.WithRange(0, 1023))
	fmt.Println(err)
	// Output:
	// true
	// ringflake: invalid configuration: prefix = "machineid"; valid: an absolute ZooKeeper path, such as "/ringflake/machineid"
	// ringflake: invalid configuration: servers = none; valid: one host:port or more
}

package machineid_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ringflake/ringflake/machineid"
)

func ExampleEnv() {
	os.Setenv("EXAMPLE_MACHINE_ID", "12")
	defer os.Unsetenv("EXAMPLE_MACHINE_ID")
	id, err := machineid.Env("EXAMPLE_MACHINE_ID", 1023).MachineID(context.Background())
	fmt.Println(id, err)
	_, err = machineid.Env("EXAMPLE_UNSET", 1023).MachineID(context.Background())
	fmt.Println(err)
	// Output:
	// 12 <nil>
	// machineid: no usable machine ID: EXAMPLE_UNSET is not set
}

func ExampleFromFunc() {
	// A source of your own, checked against the range like every provider:
	// here the second of two StatefulSets, whose pods start at 512. (In a
	// pod, machineid.StatefulSetOrdinal(511) would give the ordinal.)
	ordinal := func(context.Context) (int64, error) { return 3, nil }
	svc := machineid.FromFunc(1023, func(ctx context.Context) (int64, error) {
		n, err := ordinal(ctx)
		return 512 + n, err
	})
	id, err := svc.MachineID(context.Background())
	fmt.Println(id, err)
	_, err = machineid.FromFunc(1023, func(context.Context) (int64, error) { return 1024, nil }).MachineID(context.Background())
	fmt.Println(err)
	// Output:
	// 515 <nil>
	// machineid: no usable machine ID: func gave 1024; valid range 0..1023
}

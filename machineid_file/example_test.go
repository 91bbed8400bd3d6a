package machineid_file_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_file"
)

// A fixed machine ID, 42, guarded by its file: a second generator on it is
// refused while the first lives, and a restart waits out its mark.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "ringflake-example") // use a directory that outlives the process
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ids, err := machineid_file.New(dir, machineid.WithRange(42, 42))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(ids))
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close() // unlocks the file, and lowers the mark to the last ID issued
	id, err := g.NextID()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("machine", g.Layout().Decompose(id).Machine)

	twin, _ := machineid_file.New(dir, machineid.WithRange(42, 42))
	_, err = ringflake.New(context.Background(), ringflake.WithMachineIDSource(twin))
	fmt.Println("twin refused:", errors.Is(err, machineid.ErrExhausted))
	// Output:
	// machine 42
	// twin refused: true
}

// The machine ID from a StatefulSet pod's name (web-3 is 3), guarded by a
// file on the pod's PersistentVolume: restart-safe with no store.
func ExampleWithSource() {
	dir, err := os.MkdirTemp("", "ringflake-example") // on the pod: a directory on its volume
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ordinal := machineid.FromFunc(1023, func(context.Context) (int64, error) { return 3, nil }) // machineid.StatefulSetOrdinal(1023) in a pod
	ids, err := machineid_file.New(dir, machineid_file.WithSource(ordinal))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(ids))
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	fmt.Println("machine", g.Lease().ID)
	// Output:
	// machine 3
}

package machineid_postgres_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// A generator whose machine ID is leased from PostgreSQL. It needs a
// server, so there is no output to check.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := mp.CreateTable(ctx, pool, ""); err != nil { // or run mp.TableSQL in a migration
		log.Fatal(err)
	}
	holder, err := mp.New(pool, machineid.WithRange(0, ringflake.DefaultLayout().MaxMachine()), machineid.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(holder))
	if err != nil {
		log.Fatal(err) // for example: every ID in the range is held
	}
	defer g.Close() // releases the lease
	id, err := g.NextID()
	fmt.Println(id, err)
}

// A table name that is not a plain lowercase identifier is refused when
// the Holder is made, before anything reaches the database.
func ExampleWithTable() {
	pool, err := pgxpool.New(context.Background(), "postgres://app@db.internal/app") // connects on first use
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	_, err = mp.New(pool, mp.WithTable("Machine-IDs"))
	fmt.Println(err)
	// Output:
	// ringflake: invalid configuration: table = "Machine-IDs"; valid: a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit; at most 63 bytes), optionally schema.table
}

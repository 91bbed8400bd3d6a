package machineid_mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// A generator whose machine ID is leased from MySQL or MariaDB. It needs a
// server, so there is no output to check.
func ExampleNew() {
	ctx := context.Background()
	// interpolateParams saves a round trip per statement; the driver's
	// other settings do not matter to the store.
	db, err := sql.Open("mysql", "app:secret@tcp(db.internal:3306)/app?interpolateParams=true")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := mm.CreateTable(ctx, db, ""); err != nil { // or run mm.TableSQL in a migration
		log.Fatal(err)
	}
	holder, err := mm.New(db, machineid.WithRange(0, ringflake.DefaultLayout().MaxMachine()), machineid.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(holder))
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
	db, err := sql.Open("mysql", "app:secret@tcp(db.internal:3306)/app") // connects on first use
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	_, err = mm.New(db, mm.WithTable("Machine-IDs"))
	fmt.Println(err)
	// Output:
	// ringflake: invalid configuration: table = "Machine-IDs"; valid: a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit; at most 64 bytes), optionally database.table
}

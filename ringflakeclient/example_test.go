package ringflakeclient_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ringflake/ringflake/ringflakeclient"
)

// Two servers, run as "ringflake serve --lease redis://… --grpc-addr :9090";
// the example needs them, so it is compiled, not run.
func ExampleNew() {
	ctx := context.Background()
	c, err := ringflakeclient.New(ctx, []string{"ids-1:9090", "ids-2:9090"},
		ringflakeclient.WithMaxAge(time.Second), ringflakeclient.WithWaterMarks(1024, 8192))
	if err != nil {
		log.Fatal(err) // a bad option, or no server gave its layout
	}
	defer c.Close()
	id, err := c.NextID(ctx) // from the buffer
	if err != nil {
		log.Fatal(err) // an *ringflakeclient.Error: every server failed
	}
	fmt.Println(id)
	st := c.Stats()
	fmt.Println(st.Served, st.Dropped, st.Failovers)
}

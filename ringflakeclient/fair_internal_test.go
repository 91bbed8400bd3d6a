package ringflakeclient

import (
	"context"
	"testing"
	"time"

	"github.com/ringflake/ringflake"
)

// Callers that wait are served in the order they came: IDs that arrive
// one at a time go to the first caller still waiting. The client here has
// one server and no fill; the test plays the fill, settling blocks.
func TestWaitersAreServedInOrder(t *testing.T) {
	s := &server{target: "test", state: Ready}
	c := &Client{o: defaults(), layout: ringflake.DefaultLayout(), servers: []*server{s}, changed: make(chan struct{}),
		size: sizer{at: time.Now(), target: 1}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	defer c.cancel()
	const callers = 8
	got := make([]chan ringflake.ID, callers)
	for i := range got {
		got[i] = make(chan ringflake.ID, 1)
		go func() {
			id, err := c.NextID(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] <- id
		}()
		for waiting(c) < i+1 { // caller i is in the queue before i+1 comes
			time.Sleep(time.Millisecond)
		}
	}
	l := c.layout
	for i := range callers {
		id, err := l.Compose(ringflake.Parts{Time: time.Now(), Machine: 1, Sequence: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		s.asked++
		c.pending++
		c.settle(s, []int64{int64(id)}, 1)
		if g := <-got[i]; g != id {
			t.Fatalf("caller %d got %v; want %v, the %d-th ID to arrive", i, g, id, i)
		}
	}
	if st := c.Stats(); st.Served != callers || st.Waits.Count != callers || st.Buffered != 0 {
		t.Fatalf("Stats() = %+v; want %d served after as many waits, none buffered", st, callers)
	}
}

func waiting(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

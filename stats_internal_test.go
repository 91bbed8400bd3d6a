package ringflake

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A caller holding an older latest tick, descheduled across a step back,
// must not move the step-back mark back and count the same step again.
func TestStepBackMarkOnlyMovesUp(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithMachineID(1))
	require.NoError(t, err)
	g.noteStepBack(100, 50)
	g.noteStepBack(90, 50) // a stale latest
	g.noteStepBack(100, 50)
	assert.Equal(t, uint64(1), g.Stats().StepBacks, "one step back, seen by three callers")
	g.noteStepBack(200, 150) // the clock passed 100 and stepped back again
	assert.Equal(t, uint64(2), g.Stats().StepBacks)
}

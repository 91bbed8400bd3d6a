package main

import (
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_file"
)

// stateFlags are the flags of gen and serve for the state file that
// guards a fixed machine ID (--machine-id, or gen's default 0): a lock
// that refuses a second process on the ID, and the ID's mark, which a
// restart with the clock behind waits out.
type stateFlags struct {
	dir string
	off bool
}

func (s *stateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.dir, "state-dir", "", "keep the fixed machine ID's lock and mark in `DIR` "+
		"(default $RINGFLAKE_STATE_DIR, else $XDG_STATE_HOME/ringflake, else ~/.local/state/ringflake); "+
		"on a local disk, and in a container on a volume that outlives it")
	fs.BoolVar(&s.off, "no-state-file", false, "do not guard the fixed machine ID with a state file, "+
		"giving up the refusal of a second process on it and the wait after a restart with the clock behind: either can repeat IDs")
}

// check rejects the state flags with --lease, which has no fixed ID to
// guard, and with each other.
func (s *stateFlags) check(cmd string, set map[string]bool) error {
	switch {
	case set["lease"] && (set["state-dir"] || set["no-state-file"]):
		return usageError("%s: --state-dir and --no-state-file guard a fixed machine ID; --lease has its own store", cmd)
	case set["state-dir"] && s.off:
		return usageError("%s: --state-dir and --no-state-file contradict each other; choose one", cmd)
	case set["state-dir"] && s.dir == "":
		return usageError("%s: --state-dir = \"\"; want a directory", cmd)
	}
	return nil
}

// noStateFileNote is what gen and serve say, as a warning, with
// --no-state-file.
const noStateFileNote = "ringflake: --no-state-file: the machine ID is not guarded: a second process on it, or a restart with the clock behind, can repeat IDs"

// fixedID returns the Leaser that guards the fixed machine ID id
// (--machine-id, or 0; with a datacenter split, the datacenter's first
// machine ID plus the worker) with a file in the state directory, and where
// it comes from, for messages; or a nil Leaser if --no-state-file says not
// to, or id is outside the layout's machine IDs (New then refuses it in its
// own words). The file guards the whole machine ID, so that two processes
// of one ID are refused whatever layout each was given.
func (f *sourceFlags) fixedID(id int64, log *slog.Logger) (machineid.Leaser, string, error) {
	source := ""
	if f.set["machine-id"] {
		source = "--machine-id"
	}
	if f.state.off || id < 0 || id > f.layout().MaxMachine() {
		if f.state.off {
			log.Warn(noStateFileNote, "machine", id)
		}
		return nil, source, nil
	}
	holder, err := machineid_file.New(f.state.dir, machineid.WithRange(id, id))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errUsage, inContext(f.cmd, err))
	}
	dir := f.state.dir
	if dir == "" {
		dir = "the default state directory"
	}
	if source == "" {
		source = "machine ID 0"
	}
	return holder, source + " (state file in " + filepath.Clean(dir) + ")", nil
}

package nemesis

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ringflake/ringflake"
)

// A verdict is what the checks found in every ID the holders wrote.
type verdict struct {
	ids      int      // IDs read
	repeated int      // IDs issued more than once (each repeat counted once)
	early    int      // IDs at or below their holding's After
	examples []string // a few of each, decoded
}

type issued struct {
	id, after int64
	src       int32
}

// check reads every holder's records in dir and checks the two promises
// the harness can see: no ID is issued twice, by one holder or two; and no
// ID's tick is at or below the tick of its holding's After (the generator
// issues only ticks past it).
func check(dir string) (verdict, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.ids"))
	if err != nil {
		return verdict{}, err
	}
	var all []issued
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return verdict{}, err
		}
		for ; len(b) >= recordSize; b = b[recordSize:] {
			all = append(all, issued{int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:])), int32(i)})
		}
	}
	l := ringflake.DefaultLayout()
	name := func(src int32) string { return strings.TrimSuffix(filepath.Base(files[src]), ".ids") }
	v := verdict{ids: len(all)}
	for _, r := range all {
		if r.after == 0 {
			continue
		}
		p := l.Decompose(ringflake.ID(r.id))
		afterTick := time.Unix(0, r.after).Sub(l.Epoch) / l.Tick
		if p.Ticks <= int64(afterTick) {
			v.early++
			if v.early <= 3 {
				v.examples = append(v.examples, fmt.Sprintf("ID %d (machine %d, %s, seq %d) by holder %s is at or below its holding's After %s",
					r.id, p.Machine, p.Time.Format("15:04:05.000"), p.Sequence, name(r.src), time.Unix(0, r.after).UTC().Format("15:04:05.000")))
			}
		}
	}
	slices.SortFunc(all, func(a, b issued) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.src, b.src)) })
	for i := 1; i < len(all); i++ {
		if all[i].id != all[i-1].id {
			continue
		}
		v.repeated++
		if v.repeated <= 3 {
			p := l.Decompose(ringflake.ID(all[i].id))
			v.examples = append(v.examples, fmt.Sprintf("ID %d (machine %d, %s, seq %d) issued by holders %s and %s",
				all[i].id, p.Machine, p.Time.Format("15:04:05.000"), p.Sequence, name(all[i-1].src), name(all[i].src)))
		}
	}
	return v, nil
}

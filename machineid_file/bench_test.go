package machineid_file_test

import (
	"testing"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_file"
)

// BenchmarkNextID compares NextID on a plain fixed machine ID with NextID
// on the same ID guarded by a file, one goroutine and all of them. The
// layout has 22 sequence bits and no machine bits, as the root's seq=22
// benchmarks, so that no call waits for a tick and ns/op is the cost of a
// call: the file's mark is renewed off the path, every TTL/3.
//
//	go test -run '^$' -bench NextID -count 10 ./machineid_file | benchstat -col /machine -
func BenchmarkNextID(b *testing.B) {
	l := ringflake.DefaultLayout()
	l.MachineBits, l.SequenceBits = 0, 22
	for _, tt := range []struct {
		name string
		opt  func(b *testing.B) ringflake.Option
	}{
		{"fixed", func(*testing.B) ringflake.Option { return ringflake.WithMachineID(0) }},
		{"file", func(b *testing.B) ringflake.Option {
			h, err := machineid_file.New(b.TempDir(), machineid.WithRange(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			return ringflake.WithMachineIDSource(h)
		}},
	} {
		for _, par := range []bool{false, true} {
			name := "machine=" + tt.name + "/goroutines=1"
			if par {
				name = "machine=" + tt.name + "/goroutines=GOMAXPROCS"
			}
			b.Run(name, func(b *testing.B) {
				g, err := ringflake.New(b.Context(), ringflake.WithLayout(l), tt.opt(b))
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				b.ReportAllocs()
				if !par {
					for b.Loop() {
						if _, err := g.NextID(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := g.NextID(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

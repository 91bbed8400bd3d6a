package machineid_zookeeper

import (
	"strings"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// reference is ZooKeeper's clock until two holders report, and then the
// median, which one wrong clock, the leader's or a holder's, does not move.
func TestReference(t *testing.T) {
	zkTime := time.Unix(1_800_000_000, 0)
	own := machineid.Reading{Source: zkSource, Time: zkTime, Within: time.Millisecond / 2}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name   string
		others []report
		want   time.Duration // the reference less ZooKeeper's clock
		source string
	}{
		{"no reports", nil, 0, zkSource},
		{"one report, however far", []report{{ms(30_000), ms(2)}}, 0, zkSource},
		{"two agreeing holders outvote a leader 30s off", []report{{ms(-30_005), ms(2)}, {ms(-29_995), ms(3)}}, ms(-29_995), "the median of ZooKeeper's clock and 2 live holders' clocks"},
		{"one holder off among two", []report{{ms(4), ms(2)}, {ms(30_000), ms(2)}}, ms(4), "the median of ZooKeeper's clock and 2 live holders' clocks"},
		{"three reports: of the middle two, the one nearer ZooKeeper's", []report{{ms(-9), ms(2)}, {ms(-3), ms(2)}, {ms(7), ms(2)}}, 0, zkSource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reference(own, tt.others)
			if d := got.Time.Sub(zkTime); d != tt.want {
				t.Errorf("reference - ZooKeeper's clock = %v; want %v", d, tt.want)
			}
			if !strings.Contains(got.Source, tt.source) {
				t.Errorf("Source = %q; want %q", got.Source, tt.source)
			}
			if got.Within < own.Within {
				t.Errorf("Within = %v; want at least ZooKeeper's %v", got.Within, own.Within)
			}
		})
	}
}

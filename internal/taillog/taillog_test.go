package taillog

import (
	"strings"
	"testing"
)

// A Log keeps the last 64 KiB of what was written, whole writes or not.
func TestKeepsTheTail(t *testing.T) {
	var l Log
	if _, err := l.Write([]byte("head\n")); err != nil {
		t.Fatal(err)
	}
	if got := l.String(); got != "head" {
		t.Fatalf("String() = %q; want %q", got, "head")
	}
	line := strings.Repeat("x", 1023) + "\n"
	for range 100 { // 100 KiB
		_, _ = l.Write([]byte(line))
	}
	_, _ = l.Write([]byte("end"))
	got := l.String()
	if len(got) > size || !strings.HasSuffix(got, "end") || strings.Contains(got, "head") {
		t.Fatalf("after 100 KiB: %d bytes kept, ending %q; want at most %d, ending \"end\", without the first write", len(got), got[max(0, len(got)-8):], size)
	}
}

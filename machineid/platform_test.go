package machineid

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFirstPrivateIPv4(t *testing.T) {
	t.Parallel()
	ipnet := func(s string) net.Addr { return &net.IPNet{IP: net.ParseIP(s), Mask: net.CIDRMask(24, 32)} }
	tests := []struct {
		name  string
		addrs []net.Addr
		want  string // "" means none
	}{
		{"none", nil, ""},
		{"loopback and public only", []net.Addr{ipnet("127.0.0.1"), ipnet("8.8.8.8"), ipnet("fd00::1")}, ""},
		{"10/8 after loopback", []net.Addr{ipnet("127.0.0.1"), ipnet("10.1.2.3")}, "10.1.2.3"},
		{"172.16/12", []net.Addr{ipnet("172.20.0.9")}, "172.20.0.9"},
		{"192.168/16 as IPAddr", []net.Addr{&net.IPAddr{IP: net.ParseIP("192.168.7.8")}}, "192.168.7.8"},
		{"CGNAT", []net.Addr{ipnet("100.64.3.4")}, "100.64.3.4"},
		{"first of two", []net.Addr{ipnet("10.0.0.1"), ipnet("192.168.0.1")}, "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := firstPrivateIPv4(tt.addrs)
			if tt.want == "" {
				assert.False(t, ok, "firstPrivateIPv4 = %v; want none", got)
				return
			}
			require.True(t, ok, "firstPrivateIPv4 found nothing; want %s", tt.want)
			assert.Equal(t, tt.want, got.String())
		})
	}
}

func TestIPID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip   string
		max  int64
		want int64
	}{
		{"10.0.0.5", 1023, 5},
		{"10.0.1.5", 1023, 261},
		{"10.0.5.5", 1023, 261}, // the documented collision
		{"10.0.3.255", 1023, 1023},
		{"192.168.1.1", 255, 1},
		{"192.168.1.1", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			t.Parallel()
			got, err := ipID(netip.MustParseAddr(tt.ip), tt.max)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "ipID(%s, %d)", tt.ip, tt.max)
		})
	}
}

func TestOrdinal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host string
		want int64
		ok   bool
	}{
		{"web-0", 0, true},
		{"web-3", 3, true},
		{"my-app-db-42", 42, true},
		{"web-7.web.default.svc.cluster.local", 7, true},
		{"web", 0, false},
		{"web-", 0, false},
		{"-3", 0, false},
		{"web-3a", 0, false},
		{"web-99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			t.Parallel()
			got, err := ordinal(tt.host)
			if !tt.ok {
				assert.ErrorIs(t, err, ErrNotFound, "ordinal(%q) = %d; want ErrNotFound", tt.host, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

package machineid

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// PrivateIP returns a Source that derives the machine ID from the host's
// first private IPv4 address (10/8, 172.16/12, 192.168/16 or 100.64/10):
// the address as a 32-bit number modulo max+1, which for max = 2^b-1 is its
// low b bits.
//
// Collision risk: two hosts get the same ID whenever their addresses agree
// in those low bits. With the default 10 bits, IDs are distinct only if
// every generator sharing the ID space has its address in one aligned block
// of 1024 addresses (a /22) and runs one process per host; 10.0.1.5 and
// 10.0.5.5, for example, both give 261. Prefer a lease
// (machineid_redis) when hosts span subnets or run several processes. With
// max = 2^32-1 the ID is the whole address.
//
// MachineID returns an error wrapping [ErrNotFound] if the host has no
// private IPv4 address, or [ErrNotFound] if max is negative. It is safe
// for concurrent use.
func PrivateIP(max int64) Source {
	return provider{source: "private IP", max: max, get: func(context.Context) (int64, error) {
		ip, err := privateIPv4()
		if err != nil {
			return 0, err
		}
		return ipID(ip, max)
	}}
}

// cgnat is the shared address space of RFC 6598, common inside clusters.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// firstPrivateIPv4 returns the first private IPv4 address in addrs.
func firstPrivateIPv4(addrs []net.Addr) (netip.Addr, bool) {
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		addr, ok := netip.AddrFromSlice(ip)
		addr = addr.Unmap()
		if ok && addr.Is4() && (addr.IsPrivate() || cgnat.Contains(addr)) {
			return addr, true
		}
	}
	return netip.Addr{}, false
}

// ipID maps an IPv4 address to 0..max.
func ipID(ip netip.Addr, max int64) (int64, error) {
	if max < 0 {
		return 0, nil // check reports the bad max
	}
	b := ip.As4()
	n := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	return int64(n % (uint64(max) + 1)), nil
}

// StatefulSetOrdinal returns a Source that takes the machine ID from the
// ordinal a Kubernetes StatefulSet puts at the end of each pod's hostname:
// "web-3" gives 3. Ordinals are unique within one StatefulSet; two
// StatefulSets sharing an ID space need disjoint ranges, which this
// provider cannot arrange (wrap it with [FromFunc] to add an offset).
//
// MachineID returns an error wrapping [ErrNotFound] if the hostname does
// not end in "-N", or [ErrNotFound] if N is above max. It is safe for
// concurrent use.
func StatefulSetOrdinal(max int64) Source {
	return provider{source: "StatefulSet ordinal", max: max, get: func(context.Context) (int64, error) {
		h, err := os.Hostname()
		if err != nil {
			return 0, fmt.Errorf("%w: reading hostname: %w", ErrNotFound, err)
		}
		return ordinal(h)
	}}
}

// ordinal parses the "-N" suffix of a StatefulSet pod's hostname. Only the
// first label counts, so a fully qualified name works too.
func ordinal(hostname string) (int64, error) {
	name, _, _ := strings.Cut(hostname, ".")
	i := strings.LastIndexByte(name, '-')
	digits := name[i+1:]
	if i <= 0 || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%w: hostname %q does not end in -<ordinal>", ErrNotFound, hostname)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: hostname %q: ordinal %s: %w", ErrNotFound, hostname, digits, err)
	}
	return n, nil
}

// privateIPv4 returns the host's first private IPv4 address, or an error
// wrapping [ErrNotFound] if there is none.
func privateIPv4() (netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: listing interface addresses: %w", ErrNotFound, err)
	}
	ip, ok := firstPrivateIPv4(addrs)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: no private IPv4 address among %d interface addresses", ErrNotFound, len(addrs))
	}
	return ip, nil
}

package machineid

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// PrivateIP returns a Service that derives the machine ID from the host's
// first private IPv4 address (10/8, 172.16/12, 192.168/16 or 100.64/10):
// the address as a 32-bit number modulo max+1, which for max = 2^b-1 is its
// low b bits.
//
// Collision risk: two hosts get the same ID whenever their addresses agree
// in those low bits. With the default 10 bits, IDs are distinct only if
// every generator sharing the ID space has its address in one aligned block
// of 1024 addresses (a /22) and runs one process per host; 10.0.1.5 and
// 10.0.5.5, for example, both give 261. Prefer a lease
// (machineid_redis) when hosts span subnets or run several processes.
//
// MachineID returns an error wrapping [ErrNotFound] if the host has no
// private IPv4 address, or [ErrOutOfRange] if max is negative. It is safe
// for concurrent use.
func PrivateIP(max int64) Service {
	return provider{source: "private IP", max: max, get: func(context.Context) (int64, error) {
		ip, err := PrivateIPv4()
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

// platformIDFiles hold a stable per-installation ID on Linux (systemd, then
// D-Bus) and FreeBSD.
var platformIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id", "/etc/hostid"}

// HostHash returns a Service that hashes the platform's machine ID
// (/etc/machine-id, /var/lib/dbus/machine-id or /etc/hostid), or the
// hostname when none is readable, into 0..max with 64-bit FNV-1a.
//
// Collision risk: a hash spreads IDs evenly but gives no uniqueness. With
// n hosts and m = max+1 IDs, the chance that two collide is about
// n²/(2m): 4% for 10 hosts and 1024 IDs, 39% for 32 hosts. Containers
// often share the host's /etc/machine-id, so several processes on one host
// also collide. Use it only where a collision is detected elsewhere, or
// prefer a lease (machineid_redis).
//
// MachineID returns an error wrapping [ErrNotFound] if neither a platform
// ID nor a hostname is available, or [ErrOutOfRange] if max is negative. It
// is safe for concurrent use.
func HostHash(max int64) Service {
	return provider{source: "host hash", max: max, get: func(context.Context) (int64, error) {
		s, err := platformID(os.ReadFile, os.Hostname)
		if err != nil {
			return 0, err
		}
		return hashID(s, max), nil
	}}
}

// platformID returns the first non-empty platform ID file's content, or
// the hostname.
func platformID(readFile func(string) ([]byte, error), hostname func() (string, error)) (string, error) {
	for _, f := range platformIDFiles {
		if b, err := readFile(f); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s, nil
			}
		}
	}
	h, err := hostname()
	if err == nil && h != "" {
		return h, nil
	}
	return "", fmt.Errorf("%w: no platform ID in %s and no hostname (%v)", ErrNotFound, strings.Join(platformIDFiles, ", "), err)
}

// hashID hashes s into 0..max; max must be 0 or more for a useful result.
func hashID(s string, max int64) int64 {
	if max < 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(s))
	return int64(h.Sum64() % (uint64(max) + 1))
}

// StatefulSetOrdinal returns a Service that takes the machine ID from the
// ordinal a Kubernetes StatefulSet puts at the end of each pod's hostname:
// "web-3" gives 3. Ordinals are unique within one StatefulSet; two
// StatefulSets sharing an ID space need disjoint ranges, which this
// provider cannot arrange (wrap it with [FromFunc] to add an offset).
//
// MachineID returns an error wrapping [ErrNotFound] if the hostname does
// not end in "-N", or [ErrOutOfRange] if N is above max. It is safe for
// concurrent use.
func StatefulSetOrdinal(max int64) Service {
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

// PrivateIPv4 returns the host's first private IPv4 address, the one
// [PrivateIP] derives its ID from. It returns an error wrapping
// [ErrNotFound] if there is none. It is safe for concurrent use.
func PrivateIPv4() (netip.Addr, error) {
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

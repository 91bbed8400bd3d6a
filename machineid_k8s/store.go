package machineid_k8s

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// limits are the store's bounds on the common options. Lease durations are
// whole seconds, which the TTL is rounded up to; below a second, renewals
// every TTL/3 would load the API server for nothing.
// Take and Renew read the API server's clock (see serverClock).
var limits = machineid.Limits{Name: "machineid_k8s", MinTTL: time.Second, Clock: true}

// settings are the store's own options.
type settings struct {
	namespace string // where the Leases are; a DNS label
	prefix    string // of every Lease's name; prefix + "0" is a DNS subdomain
	identity  string // the first part of every holderIdentity; not empty
}

// WithNamespace sets the namespace of the Lease objects. Holders that share
// a namespace and a prefix share the IDs. The default is the pod's own
// namespace, read from the service account's mount
// (/var/run/secrets/kubernetes.io/serviceaccount/namespace), or "default"
// outside a pod; "" means the default.
func WithNamespace(ns string) machineid.Option {
	return machineid.StoreOption("machineid_k8s.WithNamespace", func(s *settings) {
		if ns != "" {
			s.namespace = ns
		}
	})
}

// WithPrefix sets the prefix of the Lease names: machine ID n is held with
// the Lease prefix+"n". Names must be DNS subdomains, so the prefix is
// lower-case letters, digits, '-' and '.', beginning with a letter or a
// digit. "", the default, means "ringflake-machine-".
func WithPrefix(p string) machineid.Option {
	return machineid.StoreOption("machineid_k8s.WithPrefix", func(s *settings) {
		if p != "" {
			s.prefix = p
		}
	})
}

// WithIdentity sets the name a Lease's holderIdentity begins with, so that
// kubectl shows which pod holds each ID; a random token per holding follows
// it, after an underscore. "", the default, means $POD_NAME, else the
// hostname (which is the pod's name in a pod).
func WithIdentity(name string) machineid.Option {
	return machineid.StoreOption("machineid_k8s.WithIdentity", func(s *settings) {
		if name != "" {
			s.identity = name
		}
	})
}

// namespaceFile is where a pod's service account mount names its namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// New returns a Holder of machine IDs leased from Lease objects
// (coordination.k8s.io/v1) through client, such as a clientset's
// CoordinationV1(), configured by the options of package machineid and
// [WithNamespace], [WithPrefix] and [WithIdentity]. It does not contact the
// API server: the first MachineID does. The identity needs get, list,
// create and update on leases in the namespace (deploy/kubernetes has the
// Role).
//
// New returns an error wrapping ringflake.ErrInvalidConfig, naming the
// value and what is valid, if client is nil, the namespace, prefix or
// identity is not valid, or an option is out of range; the TTL must be 1s
// to 1h, and is rounded up to whole seconds in the Leases.
func New(client coordinationv1client.LeasesGetter, opts ...machineid.Option) (*machineid.Holder, error) {
	if client == nil {
		return nil, invalid("client", "nil", "a LeasesGetter, such as a clientset's CoordinationV1()")
	}
	s := &store{
		settings: settings{namespace: defaultNamespace(namespaceFile), prefix: "ringflake-machine-", identity: defaultIdentity()},
		seen:     map[string]sighting{},
		held:     map[string]*coordinationv1.Lease{},
	}
	h, err := machineid.NewHolder(s, &s.settings, limits, opts...)
	if err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	s.leases = client.Leases(s.namespace)
	return h, nil
}

var (
	dnsLabel  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	namePrefx = regexp.MustCompile(`^[a-z0-9][-a-z0-9.]*$`)
)

// validate checks the store's own settings.
func (s *settings) validate() error {
	switch {
	case len(s.namespace) > 63 || !dnsLabel.MatchString(s.namespace):
		return invalid("namespace", fmt.Sprintf("%q", s.namespace), "a DNS label: up to 63 lower-case letters, digits and '-', beginning and ending with a letter or digit")
	case len(s.prefix) > 200 || !namePrefx.MatchString(s.prefix):
		return invalid("prefix", fmt.Sprintf("%q", s.prefix), "up to 200 lower-case letters, digits, '-' and '.', beginning with a letter or digit")
	case s.identity == "" || len(s.identity) > 200:
		return invalid("identity", fmt.Sprintf("%q", s.identity), "1 to 200 characters")
	}
	return nil
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}

// defaultNamespace returns the namespace named in file, a pod's service
// account mount, or "default" if there is none.
func defaultNamespace(file string) string {
	if b, err := os.ReadFile(file); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}

// defaultIdentity returns $POD_NAME, else the hostname, else "ringflake".
func defaultIdentity() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "ringflake"
}

// store is a [machineid.Store] of Lease objects, one per machine ID. The
// Holder makes one call at a time, so its fields need no lock.
type store struct {
	leases coordinationv1client.LeaseInterface // of the namespace; written once by New
	settings

	// seen is, by Lease name, the resourceVersion this store last saw of
	// each Lease in its range and when it first saw it, on its monotonic
	// clock: a Lease is taken over only once its record has stayed the same
	// for its duration plus the margin (see expiry). Take reads and writes
	// it.
	seen map[string]sighting

	// held is, by token, the Lease as the token's last successful write
	// left it: what Renew and Release update, conditioned on its
	// resourceVersion.
	held map[string]*coordinationv1.Lease
}

// sighting is when a store first saw a Lease's resourceVersion.
type sighting struct {
	version string
	since   time.Time // with a monotonic reading
}

var _ machineid.Store = (*store)(nil)

// holderOf is the holderIdentity of token's holdings: the identity, so
// that kubectl shows which pod holds an ID, and the token, so that each
// holding is told apart from the pod's earlier ones.
func (s *store) holderOf(token string) string { return s.identity + "_" + token }

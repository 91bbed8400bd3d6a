package ringflake

import (
	"context"
	"fmt"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// WithDatacenter sets the generator's datacenter, 0..2^DatacenterBits-1,
// for a layout whose machine ID is split into datacenter and worker
// ([Layout.DatacenterBits]). The worker then comes from [WithMachineID] or
// the machine ID source, in 0..[Layout.MaxWorker], and the generator issues
// with machine ID datacenter<<(MachineBits-DatacenterBits) | worker; a lease
// thus needs only the range 0..MaxWorker, the same in every datacenter.
// [Generator.Lease] reports that whole machine ID. New needs WithDatacenter
// with a split layout, and refuses it without one.
func WithDatacenter(dc int64) Option {
	return optionFunc(func(c *config) { c.datacenter, c.datacenterSet = dc, true })
}

// checkDatacenter validates the datacenter options against the layout
// and, for a fixed worker, makes c.machineID the whole machine ID.
func (c *config) checkDatacenter() error {
	l := c.layout
	maxDC := maxOf(l.DatacenterBits, 61)
	switch {
	case l.DatacenterBits == 0 && c.datacenterSet:
		return fmt.Errorf("%w: WithDatacenter(%d) given, but the layout has no datacenter split (Layout.DatacenterBits is 0)", ErrInvalidConfig, c.datacenter)
	case l.DatacenterBits == 0:
		return nil
	case !c.datacenterSet:
		return fmt.Errorf("%w: the layout splits the machine ID into %d bits of datacenter and %d of worker (Layout.DatacenterBits %d); give WithDatacenter(0..%d)",
			ErrInvalidConfig, l.DatacenterBits, l.MachineBits-l.DatacenterBits, l.DatacenterBits, maxDC)
	case c.datacenter < 0 || c.datacenter > maxDC:
		return configErr("datacenter", c.datacenter, fmt.Sprintf("0..%d", maxDC))
	case c.machineSet && (c.machineID < 0 || c.machineID > l.MaxWorker()):
		return configErr(fmt.Sprintf("machine ID (the worker within datacenter %d)", c.datacenter), c.machineID, fmt.Sprintf("0..%d", l.MaxWorker()))
	}
	if c.machineSet {
		c.machineID |= c.datacenter << uint(l.MachineBits-l.DatacenterBits)
	}
	return nil
}

// inDatacenter returns src as a source of whole machine IDs in c's
// datacenter, taking workers from src, or src itself without a split. A
// Leaser stays a Leaser, and is recorded as in use under its own identity,
// so that it cannot serve a second generator through another wrapper.
func (c *config) inDatacenter(src machineid.Source) (machineid.Source, error) {
	l := c.layout
	if l.DatacenterBits == 0 {
		return src, nil
	}
	w := workerSource{src: src, dc: c.datacenter, maxWorker: l.MaxWorker(),
		base: c.datacenter << uint(l.MachineBits-l.DatacenterBits)}
	leaser, ok := src.(machineid.Leaser)
	if !ok {
		return &w, nil
	}
	if err := claimLeaser(leaser); err != nil {
		return nil, err
	}
	return &workerLeaser{workerSource: w, leaser: leaser}, nil
}

// workerSource is a source of workers made a source of machine IDs in one
// datacenter. Its fields are written once, by inDatacenter.
type workerSource struct {
	src       machineid.Source
	dc        int64
	base      int64 // dc's bits of the machine ID
	maxWorker int64
}

// MachineID returns the source's worker in w's datacenter, or an error
// wrapping ErrInvalidConfig for a worker outside 0..maxWorker.
func (w *workerSource) MachineID(ctx context.Context) (int64, error) {
	id, err := w.src.MachineID(ctx)
	if err != nil {
		return id, err
	}
	if id < 0 || id > w.maxWorker {
		return -1, w.outside(id)
	}
	return w.base | id, nil
}

func (w *workerSource) outside(id int64) error {
	return configErr(fmt.Sprintf("worker from the machine ID source (datacenter %d)", w.dc), id,
		fmt.Sprintf("0..%d (Layout.MaxWorker); give the source that range", w.maxWorker))
}

// workerLeaser is a workerSource over a Leaser, whose lease reports it
// translates alike. A worker outside the range is reported as not held.
type workerLeaser struct {
	workerSource
	leaser machineid.Leaser
}

// Watch follows the leaser's lease with its ID made a machine ID.
func (w *workerLeaser) Watch(fn func(machineid.Lease)) (stop func()) {
	return w.leaser.Watch(func(l machineid.Lease) {
		switch {
		case l.ID > w.maxWorker:
			l.Held, l.Err, l.ID = false, w.outside(l.ID), w.base
		case l.ID >= 0:
			l.ID |= w.base
		}
		fn(l)
	})
}

// Release releases the leaser's lease.
func (w *workerLeaser) Release(issued time.Time) error { return w.leaser.Release(issued) }

// unclaimInner forgets the Leaser under a workerLeaser as in use; see
// inDatacenter.
func unclaimInner(src machineid.Source) {
	if w, ok := src.(*workerLeaser); ok {
		inUse.Delete(w.leaser)
	}
}

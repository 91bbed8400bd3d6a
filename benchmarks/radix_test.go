package main

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRadixSort(t *testing.T) {
	for _, n := range []int{0, 1, 2, 1000, 100_000} {
		a := make([]int64, n)
		for i := range a {
			switch i % 5 {
			case 0:
				a[i] = empty
			case 1:
				a[i] = rand.Int64()
			default:
				a[i] = 1<<40 + rand.Int64N(1<<20)
			}
		}
		want := slices.Clone(a)
		slices.Sort(want)
		radixSort(a, make([]int64, n))
		if !slices.Equal(a, want) {
			t.Errorf("radixSort of %d values differs from slices.Sort", n)
		}
	}
}

func BenchmarkSortIDs(b *testing.B) {
	ids := make([]int64, 4<<20)
	for i := range ids {
		ids[i] = 1<<40 + int64(i)<<12 ^ rand.Int64N(4096)
	}
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	work, tmp := make([]int64, len(ids)), make([]int64, len(ids))
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(work, ids)
			radixSort(work, tmp)
		}
	})
	b.Run("slices", func(b *testing.B) {
		for b.Loop() {
			copy(work, ids)
			slices.Sort(work)
		}
	})
}

package main

// radixSort sorts the non-negative values of a, and moves the negative
// ones (empty slots) to the front, using tmp (at least len(a) long) as
// scratch space. It makes one pass per 11-bit digit and skips every digit
// in which all values agree, which for IDs of one run is most of them: the
// machine ID and the high bits of the time are the same throughout. For the
// few million IDs of a run it is several times faster than slices.Sort.
func radixSort(a, tmp []int64) {
	const bits = 11
	const buckets = 1 << bits
	if len(a) < 2 {
		return
	}
	src, dst := a, tmp[:len(a)]
	swapped := false
	for shift := uint(0); shift < 64; shift += bits {
		var count [buckets + 1]int
		for _, v := range src {
			count[digit(v, shift)+1]++
		}
		if skip(count[1:], len(src)) {
			continue
		}
		for i := 1; i <= buckets; i++ {
			count[i] += count[i-1]
		}
		for _, v := range src {
			d := digit(v, shift)
			dst[count[d]] = v
			count[d]++
		}
		src, dst, swapped = dst, src, !swapped
	}
	if swapped {
		copy(a, src)
	}
}

// digit returns v's digit at shift, with the sign bit flipped so that
// negative values sort first.
func digit(v int64, shift uint) int {
	return int((uint64(v)^1<<63)>>shift) & (1<<11 - 1)
}

// skip reports whether one bucket holds every value.
func skip(count []int, n int) bool {
	for _, c := range count {
		if c != 0 {
			return c == n
		}
	}
	return true
}

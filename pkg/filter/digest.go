package filter

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
)

// Wake filtering (docs/delivery-options.md#filtered-receive-and-browse): a send wakes only the
// parked receives whose filter could select one of its messages. A send tells what it holds by the
// digests of its messages' attribute pairs, and a parked receive is woken when, for each attribute
// its filter names, the digest of one of the allowed values is among them. Digests may collide (a
// spurious wake-up costs one look, as every wake-up did before), never miss.

// MaxWakeDigests is how many distinct attribute pairs a wake-up carries at most: a send with
// more names none (WakeDigests answers nil) and wakes every parked receive, as before. It is
// what one send script call can hold (16 combined sends × 10 messages × 10 attributes), so
// no send can reach it to wake everyone; a wake-up is then at most 1,600 × 17 bytes.
const MaxWakeDigests = 1600

// Digest is the FNV-64a digest of one attribute pair: the name's length (uvarint), the name,
// then the value, so no two pairs share an input.
func Digest(name, value string) uint64 {
	h := fnv.New64a()
	var n [binary.MaxVarintLen64]byte
	_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(name)))])
	_, _ = h.Write([]byte(name))
	_, _ = h.Write([]byte(value))
	return h.Sum64()
}

// WakeDigests are the sorted, distinct digests of every attribute pair of the messages
// given; nil when they are more than MaxWakeDigests (the wake-up then names none). A send of
// messages without attributes answers an empty, non-nil slice: it can wake no filtered
// receive.
func WakeDigests(attrs ...map[string]string) []uint64 {
	n := 0
	for _, a := range attrs {
		n += len(a)
	}
	if n == 0 {
		return []uint64{} // the common send: no attributes, nothing to hash
	}
	seen := make(map[uint64]struct{}, min(n, MaxWakeDigests+1))
	for _, a := range attrs {
		for k, v := range a {
			seen[Digest(k, v)] = struct{}{}
			if len(seen) > MaxWakeDigests {
				return nil
			}
		}
	}
	return sortedDigests(seen)
}

// WakeSets is, per attribute f names (in name order), the digests of its allowed values: the
// form a parked receive's watch matches wake-ups with. nil for the empty filter.
func (f *Filter) WakeSets() [][]uint64 {
	if f.Empty() {
		return nil
	}
	out := make([][]uint64, 0, len(f.Attributes))
	for _, name := range f.Names() {
		set := make([]uint64, 0, len(f.Attributes[name]))
		for _, v := range f.Attributes[name] {
			set = append(set, Digest(name, v))
		}
		out = append(out, set)
	}
	return out
}

// MergeWakeDigests is the digests of one wake-up covering several sends (each as
// WakeDigests gives them): nil when any is nil or together they pass MaxWakeDigests.
func MergeWakeDigests(lists ...[]uint64) []uint64 {
	// The common case, sends without attributes (or one send with them), needs no merging.
	var only []uint64
	for _, l := range lists {
		switch {
		case l == nil:
			return nil
		case len(l) > 0 && only != nil:
			return mergeDigests(lists)
		case len(l) > 0:
			only = l
		}
	}
	if only == nil {
		return []uint64{}
	}
	return only
}

// mergeDigests is MergeWakeDigests of several non-empty lists.
func mergeDigests(lists [][]uint64) []uint64 {
	seen := make(map[uint64]struct{})
	for _, l := range lists {
		if l == nil {
			return nil
		}
		for _, d := range l {
			seen[d] = struct{}{}
		}
		if len(seen) > MaxWakeDigests {
			return nil
		}
	}
	return sortedDigests(seen)
}

// sortedDigests is the set's digests in ascending order, the form wake-ups carry.
func sortedDigests(seen map[uint64]struct{}) []uint64 {
	out := make([]uint64, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

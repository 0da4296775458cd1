// Package jsonscan finds the ends of JSON values without decoding them: the one-pass splitters
// of the API's request decoder and of the load generator's answer reader walk bytes with it.
// It checks only what it needs to find an end; callers that need validity check it first
// (json.Valid) or fall back to encoding/json when a walk gives up. Unquote is the one strict
// decoder of a string's inside, shared by the API's decoder and the attribute filter.
package jsonscan

// Space returns the index of the first byte at or after i that is not JSON whitespace.
func Space(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Value returns the index just past the JSON value starting at data[i], or -1 when data ends
// first or there is no value there.
func Value(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return String(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				j := String(data, i)
				if j < 0 {
					return -1
				}
				i = j - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default: // number, true, false, null
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return -1
				}
				return j
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// String returns the index just past the string literal starting at data[i] (a '"'), or -1
// when data ends first.
func String(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

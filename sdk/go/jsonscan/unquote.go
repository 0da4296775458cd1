package jsonscan

import (
	"strings"
	"unicode/utf8"
)

// Unquote decodes the inside of a JSON string literal, rejecting what encoding/json would
// have replaced with U+FFFD (invalid UTF-8, unpaired surrogate escapes) and anything that is
// not a JSON string at all. The second result says what is wrong ("" when nothing is): the
// API and the attribute filter both refuse such strings, naming their own field.
func Unquote(b []byte) (string, string) {
	if !utf8.Valid(b) {
		return "", "is not valid UTF-8"
	}
	// Runs of plain bytes are copied whole: a 256 KiB body is one copy, not 256 Ki byte
	// writes (a fifth of the server's CPU while one tenant sent maximal payloads at its
	// rate limit; about 2.5x the CPU of this).
	n := plainRun(b)
	if n == len(b) {
		return string(b), ""
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); {
		run := plainRun(b[i:])
		sb.Write(b[i : i+run])
		if i += run; i >= len(b) {
			break
		}
		if c := b[i]; c == '"' || c < 0x20 {
			return "", "is not a valid JSON string"
		}
		if i+1 >= len(b) {
			return "", "has a broken escape"
		}
		switch b[i+1] {
		case '"', '\\', '/':
			sb.WriteByte(b[i+1])
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok {
				return "", "has a broken \\u escape"
			}
			i += 6
			switch {
			case r >= 0xD800 && r < 0xDC00:
				lo, ok := rune(0), false
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					lo, ok = hex4(b[i+2:])
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return "", "has an unpaired surrogate escape"
				}
				i += 6
				sb.WriteRune(0x10000 + (r-0xD800)<<10 + (lo - 0xDC00))
			case r >= 0xDC00 && r <= 0xDFFF:
				return "", "has an unpaired surrogate escape"
			default:
				sb.WriteRune(r)
			}
			continue
		default:
			return "", "has a broken escape"
		}
		i += 2
	}
	return sb.String(), ""
}

// plainRun is the length of b's prefix that a JSON string holds as is: no escape, quote or
// control character.
func plainRun(b []byte) int {
	for i, c := range b {
		if c == '\\' || c == '"' || c < 0x20 {
			return i
		}
	}
	return len(b)
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

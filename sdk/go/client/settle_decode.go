package client

import "bytes"

// decodeFast reads a settlement's answer (a stream's {"id", "results"} or a batch receipt
// call's {"results"}) without reflection when no entry failed, the common answer; false for
// anything else (an error, a repeated or escaped key), which encoding/json then decodes. Keys
// match case-insensitively, as encoding/json matches them.
func (a *streamAnswer) decodeFast(b []byte) bool {
	seen := 0
	ok := members(b, func(k []byte, b []byte, i int) (int, bool) {
		switch {
		case bytes.EqualFold(k, []byte("id")) && seen&1 == 0:
			seen |= 1
			var end int
			var ok bool
			a.ID, end, ok = strAt(b, i)
			return end, ok
		case bytes.EqualFold(k, []byte("results")) && seen&2 == 0:
			seen |= 2
			a.Results = make([]resultBody, 0, MaxReceiptBatch)
			return items(b, i, func(b []byte, i int) (int, bool) {
				a.Results = append(a.Results, resultBody{})
				return decodeResult(b, i, &a.Results[len(a.Results)-1])
			})
		case bytes.EqualFold(k, []byte("error")) && seen&4 == 0:
			seen |= 4
			return null(b, i)
		case bytes.EqualFold(k, []byte("id")), bytes.EqualFold(k, []byte("results")), bytes.EqualFold(k, []byte("error")):
			return 0, false // repeated: encoding/json keeps the last
		}
		return skip(b, i)
	})
	if !ok {
		*a = streamAnswer{}
	}
	return ok
}

// decodeResult reads one entry's result that carries no error ({"index": n}).
func decodeResult(b []byte, i int, r *resultBody) (int, bool) {
	seen := 0
	return object(b, i, func(k []byte, b []byte, i int) (int, bool) {
		switch {
		case bytes.EqualFold(k, []byte("index")) && seen&1 == 0:
			seen |= 1
			end, ok := skip(b, i)
			if !ok || !plainInt(b[i:end]) {
				return 0, false
			}
			n, ok := integer(b[i:end])
			r.Index = int(n)
			return end, ok && int64(r.Index) == n
		case bytes.EqualFold(k, []byte("error")) && seen&2 == 0:
			seen |= 2
			return null(b, i)
		case bytes.EqualFold(k, []byte("index")), bytes.EqualFold(k, []byte("error")):
			return 0, false
		}
		return skip(b, i)
	})
}

// null passes over a null at b[i:]; anything else gives up.
func null(b []byte, i int) (int, bool) {
	if bytes.HasPrefix(b[i:], []byte("null")) {
		end, ok := skip(b, i)
		return end, ok && end == i+4
	}
	return 0, false
}

// plainInt: raw is a JSON integer (-?digits, no leading zero), as encoding/json takes for an int.
func plainInt(raw []byte) bool {
	d := bytes.TrimPrefix(raw, []byte("-"))
	if len(d) == 0 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

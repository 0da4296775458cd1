package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

// settleBoth decodes b with the one-pass reader and with encoding/json.
func settleBoth(b []byte) (fast, slow streamAnswer, ok bool, slowErr error) {
	ok = fast.decodeFast(b)
	slowErr = json.Unmarshal(b, &slow)
	return fast, slow, ok, slowErr
}

// The reader reads the answers where every entry succeeded as encoding/json does, and gives
// up on the rest for encoding/json to decode.
func TestDecodeSettleAnswer(t *testing.T) {
	for _, take := range []string{
		`{"id":"7","results":[{"index":0},{"index":1,"error":null}]}`,
		`{"results":[{"index":0}]}`,
		`{"id":"1","results":[],"error":null}`,
		` { "ID" : "2" , "Results" : [ { "Index" : 3 , "x" : {"y":[1]} } ] } `,
		`{"id":"3","results":[{"index":-1}],"extra":"ignored"}`,
	} {
		fast, slow, ok, err := settleBoth([]byte(take))
		if !ok || err != nil {
			t.Fatalf("%s: fast %v, encoding/json %v", take, ok, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s:\nfast %+v\nslow %+v", take, fast, slow)
		}
	}
	for _, giveUp := range []string{
		`{"id":"1","results":[{"index":0,"error":{"code":"receipt_handle_stale","message":"stale"}}]}`,
		`{"id":"1","error":{"code":"invalid_argument","message":"no"}}`,
		`{"id":"1","id":"2","results":[]}`,
		`{"id":"1","results":[{"index":01}]}`,
		`{"id":"1","results":[{"index":1.0}]}`,
		`{"id":"1","results":[{"index":"1"}]}`,
		`{"id":"1","results":null}`,
		`{"id":"1","results":[]} x`,
		`{"i\u0064":"1","results":[]}`,
	} {
		if _, _, ok, _ := settleBoth([]byte(giveUp)); ok {
			t.Errorf("the reader took %s", giveUp)
		}
	}
}

// Whatever the reader takes, encoding/json decodes to the same answer.
func FuzzDecodeSettleAnswer(f *testing.F) {
	f.Add([]byte(`{"id":"7","results":[{"index":0},{"index":1,"error":null}]}`))
	f.Add([]byte(`{"results":[{"index":0,"error":{"code":"x"}}]}`))
	f.Add([]byte(`{"id":"1","error":null,"results":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, slow, ok, err := settleBoth(b)
		if !ok || !json.Valid(b) {
			return
		}
		if err != nil {
			t.Fatalf("the reader took %q, encoding/json refused it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", b, fast, slow)
		}
	})
}

package bench

import (
	"encoding/json"
	"reflect"
	"testing"
)

var answerSeeds = []string{
	`{"messages":[{"messageId":"m1","body":"hello","receiptHandle":"h1","attributes":{"a":"b"},"receiveCount":1},{"body":"x\"y\\u00e9","receiptHandle":"h2"}]}`,
	`{"messages":[]}`,
	` { "messages" : [ { "body" : "a" , "receiptHandle" : "b" } ] } `,
	`{"results":[{"receiptHandle":"h","error":null},{"error":{"code":"receipt_handle_stale","message":"m"}}]}`,
	`{"messages":[{"messageId":"m","duplicate":true},{"messageId":"n"}],"failed":[{"index":2,"error":{"code":"invalid_argument"}}]}`,
	`{"messages":[{"body":"a"}],"other":{"nested":[1,2,{"x":"}"}]},"n":-1.5e3,"t":true}`,
	`{"messages":[{"body":1}]}`,
	`{"messages":`,
	`[]`,
	`{"messages":[{"body":"a","receiptHandle":"1"}],"messages":[{"body":"b"}]}`,
	`{"results":[{"error":{"code":"x"},"error":null}]}`,
}

// The fast readers agree with encoding/json on every answer both read.
func FuzzFastDecode(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check(t, b, &receiveResp{}, &receiveResp{})
		check(t, b, &ackResp{}, &ackResp{})
		check(t, b, &sendResp{}, &sendResp{})
	})
}

func TestFastDecodeSeeds(t *testing.T) {
	for _, s := range answerSeeds {
		check(t, []byte(s), &receiveResp{}, &receiveResp{})
		check(t, []byte(s), &ackResp{}, &ackResp{})
		check(t, []byte(s), &sendResp{}, &sendResp{})
	}
	var r receiveResp
	if !r.decodeFast([]byte(answerSeeds[0])) || len(r.Messages) != 2 || r.Messages[1].Body != `x"y\u00e9` || r.Messages[1].ReceiptHandle != "h2" {
		t.Fatalf("receive answer read as %+v", r)
	}
	var a ackResp
	if !a.decodeFast([]byte(answerSeeds[3])) || len(a.Results) != 2 || a.Results[0].Error != nil || a.Results[1].Error.Code != "receipt_handle_stale" {
		t.Fatalf("ack answer read as %+v", a)
	}
}

func check[T fastDecoder](t *testing.T, b []byte, fast, slow T) {
	t.Helper()
	if !fast.decodeFast(b) || json.Unmarshal(b, slow) != nil {
		return
	}
	// encoding/json leaves a missing or null array nil; the fast reader may make it empty.
	fj, _ := json.Marshal(fast)
	sj, _ := json.Marshal(slow)
	norm := func(j []byte) any {
		var v any
		_ = json.Unmarshal(j, &v)
		return stripNull(v)
	}
	if !reflect.DeepEqual(norm(fj), norm(sj)) {
		t.Fatalf("on %q: fast %s, encoding/json %s", b, fj, sj)
	}
}

func stripNull(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else if a, ok := e.([]any); ok && len(a) == 0 {
				delete(x, k)
			} else {
				x[k] = stripNull(e)
			}
		}
	case []any:
		for i := range x {
			x[i] = stripNull(x[i])
		}
	}
	return v
}

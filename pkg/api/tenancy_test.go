package api

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/tenancy"
)

func TestParseLimitsPatch(t *testing.T) {
	p, err := parseLimitsPatch([]byte(`{"limits":{"maxQueues":5,"requestsPerSecond":null}}`))
	if err != nil || len(p) != 2 || *p["maxQueues"] != 5 || p["requestsPerSecond"] != nil {
		t.Fatalf("patch %v, %v", p, err)
	}
	for body, field := range map[string]string{
		`{}`:                                   "limits",
		`{"limits":null}`:                      "limits",
		`{"limits":[]}`:                        "limits",
		`{"limits":{"maxQueues":1.5}}`:         "limits.maxQueues",
		`{"limits":{"maxStoredBytes":0}}`:      "limits.maxStoredBytes",
		`{"limits":{"maxWaitingReceives":-1}}`: "limits.maxWaitingReceives",
		`{"limits":{"nope":1}}`:                "limits.nope",
		`{"limits":{},"x":1}`:                  "x",
	} {
		if _, err := parseLimitsPatch([]byte(body)); err == nil || err.Field != field {
			t.Errorf("%s: %v, want field %q", body, err, field)
		}
	}
}

func FuzzLimitsPatch(f *testing.F) {
	for _, s := range []string{`{"limits":{"maxQueues":5}}`, `{"limits":{"maxQueues":null,"maxStoredBytes":1e3}}`, `{"limits":{}}`, `{`, `{"limits":{"x":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseLimitsPatch(data)
		if err != nil {
			if err.Code != apierr.InvalidArgument || (err.Field != "" && !strings.HasPrefix(err.Field, "limits") && !strings.HasPrefix(string(data), "{")) {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		for name, v := range p {
			if v == nil {
				continue
			}
			if why := tenancy.CheckValue(name, *v); why != "" {
				t.Fatalf("accepted %s = %d: %s", name, *v, why)
			}
		}
	})
}

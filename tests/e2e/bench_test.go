package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/services/queues/stack"
)

// BenchmarkHTTPSendReceiveAck measures the whole path over HTTP on one API replica and one
// redis-server: each op sends 10 messages, receives them (batch of 10) and acknowledges them
// in one batch call. Run: go test -run '^$' -bench HTTP -benchtime 5s ./tests/e2e/
func BenchmarkHTTPSendReceiveAck(b *testing.B) {
	requireStack(b, "a replica of its own with limits lifted")
	srv, closeReplica, err := w.replica(context.Background(), stack.Options{Rates: api.Rates{StandardSend: 1e6, StandardReceive: 1e6, FIFOSend: 1e6, FIFOReceive: 1e6}})
	if err != nil {
		b.Fatal(err)
	}
	defer closeReplica()
	tn := newTenant(b)
	tn.a.do("POST", "/v1/queues", map[string]any{"name": "bench"}).must(b, 201)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(path string, body []byte, auth bool) []byte {
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer "+tn.token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			b.Fatalf("%s: %d %s", path, resp.StatusCode, out)
		}
		return out
	}
	msgs := make([]string, 10)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"body":"%s"}`, strings.Repeat("x", 64))
	}
	send := []byte(`{"messages":[` + strings.Join(msgs, ",") + `]}`)
	recv := []byte(`{"maxMessages":10}`)
	b.SetParallelism(8) // 16 requests in flight on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post("/v1/queues/bench/messages", send, true)
			var got struct {
				Messages []struct {
					ReceiptHandle string `json:"receiptHandle"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(post("/v1/queues/bench/receive", recv, true), &got); err != nil {
				b.Fatal(err)
			}
			if len(got.Messages) == 0 {
				continue
			}
			hs := make([]string, len(got.Messages))
			for i, m := range got.Messages {
				hs[i] = m.ReceiptHandle
			}
			body, _ := json.Marshal(map[string]any{"receiptHandles": hs})
			post("/v1/receipts/ack", body, false)
		}
	})
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "msgs/s")
}

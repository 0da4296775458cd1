package sqs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// BenchmarkDoors compares one round of the performance workload's steady state — send a batch
// of 10 messages of 64 bytes, receive them, acknowledge them — through /v1 and through the SQS
// door, on each backend:
//
//	v1       /v1 with JSON bodies (net/http)
//	sqs-raw  the SQS door's JSON 1.0 protocol, each request signed with SigV4 (net/http)
//	sqs-sdk  the SQS door through aws-sdk-go-v2's client (its own request pipeline included)
//
// Each op is 3 requests and 10 messages.
func BenchmarkDoors(b *testing.B) {
	body := strings.Repeat("x", 64)
	for _, be := range backends {
		e := newBenchEnv(b, be)
		b.Run(be.name+"/v1", func(b *testing.B) { e.benchV1(b, body) })
		b.Run(be.name+"/sqs-raw", func(b *testing.B) { e.benchSQSRaw(b, body) })
		b.Run(be.name+"/sqs-sdk", func(b *testing.B) { e.benchSQSSDK(b, body) })
	}
}

type benchEnv struct {
	*env
	http *http.Client
}

func newBenchEnv(b *testing.B, be backend) *benchEnv {
	var p struct{ ID, Slug string }
	benchV1(b, be.url, operator, "POST", "/v1/projects", map[string]any{"name": "bench"}, &p)
	var tok tokenAnswer
	benchV1(b, be.url, operator, "POST", "/v1/projects/"+p.ID+"/tokens", map[string]any{"name": "bench", "scopes": []string{"*"}}, &tok)
	e := &env{b: be, project: p.Slug, token: tok}
	e.sqs = e.client(tok.Slug, tok.SQSSecretAccessKey)
	return &benchEnv{env: e, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

func benchV1(b *testing.B, base, bearer, method, path string, body, out any) {
	b.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		_ = json.Unmarshal(raw, out)
	}
}

func (e *benchEnv) post(b *testing.B, req *http.Request) []byte {
	resp, err := e.http.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 && resp.StatusCode != 204 {
		b.Fatalf("%s: %d %s", req.URL, resp.StatusCode, raw)
	}
	return raw
}

func (e *benchEnv) v1req(path string, body []byte) *http.Request {
	req, _ := http.NewRequest("POST", e.b.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token.Token)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func (e *benchEnv) benchV1(b *testing.B, body string) {
	name := fmt.Sprintf("bench-v1-%d", time.Now().UnixNano())
	benchV1(b, e.b.url, e.token.Token, "POST", "/v1/queues", map[string]any{"name": name}, nil)
	msgs := make([]map[string]any, 10)
	for i := range msgs {
		msgs[i] = map[string]any{"body": body}
	}
	send, _ := json.Marshal(map[string]any{"messages": msgs})
	recv := []byte(`{"maxMessages":10,"waitSeconds":0}`)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.post(b, e.v1req("/v1/queues/"+name+"/messages", send))
			var r struct {
				Messages []struct {
					ReceiptHandle string `json:"receiptHandle"`
				} `json:"messages"`
			}
			_ = json.Unmarshal(e.post(b, e.v1req("/v1/queues/"+name+"/receive", recv)), &r)
			if len(r.Messages) == 0 {
				continue
			}
			hs := make([]string, len(r.Messages))
			for i, m := range r.Messages {
				hs[i] = m.ReceiptHandle
			}
			ack, _ := json.Marshal(map[string]any{"receiptHandles": hs})
			e.post(b, e.v1req("/v1/receipts/ack", ack))
		}
	})
}

func (e *benchEnv) sqsreq(b *testing.B, action string, body []byte) *http.Request {
	req, _ := http.NewRequest("POST", e.b.url+"/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: e.token.Slug, SecretAccessKey: e.token.SQSSecretAccessKey},
		req, hex.EncodeToString(sum[:]), "sqs", "us-east-1", time.Now()); err != nil {
		b.Fatal(err)
	}
	return req
}

func (e *benchEnv) benchSQSRaw(b *testing.B, body string) {
	name := fmt.Sprintf("bench-raw-%d", time.Now().UnixNano())
	url := *must(e.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})).get(b).QueueUrl
	entries := make([]map[string]any, 10)
	for i := range entries {
		entries[i] = map[string]any{"Id": fmt.Sprint(i), "MessageBody": body}
	}
	send, _ := json.Marshal(map[string]any{"QueueUrl": url, "Entries": entries})
	recv, _ := json.Marshal(map[string]any{"QueueUrl": url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0})
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.post(b, e.sqsreq(b, "SendMessageBatch", send))
			var r struct {
				Messages []struct{ ReceiptHandle string }
			}
			_ = json.Unmarshal(e.post(b, e.sqsreq(b, "ReceiveMessage", recv)), &r)
			if len(r.Messages) == 0 {
				continue
			}
			del := make([]map[string]any, len(r.Messages))
			for i, m := range r.Messages {
				del[i] = map[string]any{"Id": fmt.Sprint(i), "ReceiptHandle": m.ReceiptHandle}
			}
			d, _ := json.Marshal(map[string]any{"QueueUrl": url, "Entries": del})
			e.post(b, e.sqsreq(b, "DeleteMessageBatch", d))
		}
	})
}

func (e *benchEnv) benchSQSSDK(b *testing.B, body string) {
	ctx := context.Background()
	name := fmt.Sprintf("bench-sdk-%d", time.Now().UnixNano())
	url := must(e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})).get(b).QueueUrl
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body)}
	}
	c := sqs.New(sqs.Options{BaseEndpoint: aws.String(e.b.url), Region: "us-east-1", HTTPClient: e.http,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: e.token.Slug, SecretAccessKey: e.token.SQSSecretAccessKey}, nil
		})})
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries}); err != nil {
				b.Fatal(err)
			}
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
			if err != nil {
				b.Fatal(err)
			}
			if len(r.Messages) == 0 {
				continue
			}
			del := make([]types.DeleteMessageBatchRequestEntry, len(r.Messages))
			for i, m := range r.Messages {
				del[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
			}
			if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: del}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

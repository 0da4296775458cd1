package sdkgo

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/services/queues/stack"
	"github.com/queueshq/queues/tests/stacktest"
)

// deadDynamo is a DynamoDB client for a port nothing listens on.
func deadDynamo(t *testing.T) *dynamodb.Client {
	port, err := testservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	d, err := testservers.DynamoClient(t.Context(), "http://127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hasOperation reports whether openapi.yaml has the operation (push subscription routes are
// tested once they are in it).
func hasOperation(t testing.TB, id string) bool {
	return slices.Contains(openapicheck.OperationIDs(openapicheck.LoadSpec(t)), id)
}

// Every route of openapi.yaml through the SDK against the real service, each exchange
// validated against the spec, and every operation exercised.
func TestEveryRoute(t *testing.T) {
	ctx := t.Context()
	chk := openapicheck.NewChecker(t, srv.URL)
	tn := newTenant(t, checked(chk))
	op, c := tn.op, tn.c

	// Operations.
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	// This server has no public URL, so it signs no push tokens: 404 (tests/e2e checks the keys).
	if k, err := c.PushJWKS(ctx); !client.IsNotFound(err) {
		t.Fatalf("push JWKS without a public URL: %+v %v, want not_found", k, err)
	}

	// Projects and tokens.
	p, err := op.GetProject(ctx, tn.project)
	if err != nil || p.ID != tn.project || !strings.HasPrefix(p.Slug, "prj_") || p.CreatedAt.IsZero() {
		t.Fatalf("get project: %+v %v", p, err)
	}
	if bySlug, err := op.GetProject(ctx, p.Slug); err != nil || bySlug.ID != p.ID {
		t.Fatalf("get project by slug: %+v %v", bySlug, err)
	}
	page, err := op.ListProjects(ctx, client.Page{Limit: 1})
	if err != nil || len(page.Projects) != 1 || page.NextCursor == nil {
		t.Fatalf("list projects: %+v %v", page, err)
	}
	if next, err := op.ListProjects(ctx, client.Page{Limit: 1, Cursor: *page.NextCursor}); err != nil || len(next.Projects) != 1 || next.Projects[0].ID == page.Projects[0].ID {
		t.Fatalf("list projects, page 2: %+v %v", next, err)
	}
	tok, err := op.CreateToken(ctx, p.Slug, client.CreateTokenInput{Name: "reader", Scopes: []string{client.ScopeQueuesRead}, TTLSeconds: client.Int(3600)})
	if err != nil || tok.Token == "" || tok.ExpiresAt == nil || !slices.Equal(tok.Scopes, []string{"queues:read"}) {
		t.Fatalf("create token: %+v %v", tok, err)
	}
	if cr, err := op.SQSCredentials(ctx, p.ID, tok.Slug); err != nil || cr.AccessKeyID != tok.Slug || cr.SecretAccessKey == "" || cr.SecretAccessKey != tok.SQSSecretAccessKey {
		t.Fatalf("sqs credentials: %+v %v (token %+v)", cr, err, tok)
	}
	if err := op.RevokeToken(ctx, p.ID, tok.Slug); err != nil {
		t.Fatal(err)
	}

	// Queues.
	dlq, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "orders-dlq"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.CreateQueue(ctx, client.CreateQueueInput{
		Name: "orders", VisibilityTimeoutSeconds: client.Int(45), RetentionSeconds: client.Int(3600),
		DelaySeconds: client.Int(0), ReceiveWaitSeconds: client.Int(1),
		Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 3}, MaxMessageBytes: client.Int(1 << 20),
	})
	if err != nil {
		t.Fatal(err)
	}
	if dlq.MaxMessageBytes != 262144 || q.MaxMessageBytes != 1<<20 {
		t.Fatalf("maxMessageBytes: %d (default), %d (created with 1 MiB)", dlq.MaxMessageBytes, q.MaxMessageBytes)
	}
	if q.Type != client.Standard || q.VisibilityTimeoutSeconds != 45 || q.RetentionSeconds != 3600 || q.ReceiveWaitSeconds != 1 ||
		q.Redrive == nil || q.Redrive.DeadLetterQueue != dlq.ID || q.Redrive.MaxReceiveCount != 3 || q.Partitions < 1 {
		t.Fatalf("created queue: %+v", q)
	}
	list, err := c.ListQueues(ctx, client.ListQueuesInput{Prefix: "orders", Page: client.Page{Limit: 1}})
	if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "orders" || list.NextCursor == nil {
		t.Fatalf("list queues: %+v %v", list, err)
	}
	var names []string
	for q, err := range c.AllQueues(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, q.Name)
	}
	if !slices.Equal(names, []string{"orders", "orders-dlq"}) {
		t.Fatalf("all queues: %v", names)
	}
	for _, ref := range []string{q.ID, q.Slug, q.Name} {
		if got, err := c.GetQueue(ctx, ref); err != nil || got.ID != q.ID {
			t.Fatalf("get queue %s: %+v %v", ref, got, err)
		}
	}
	q, err = c.UpdateQueue(ctx, "orders", client.UpdateQueueInput{VisibilityTimeoutSeconds: client.Int(60), RemoveRedrive: true, MaxCancels: client.Int(3),
		MaxMessageBytes: client.Int(4096)})
	if err != nil || q.VisibilityTimeoutSeconds != 60 || q.Redrive != nil || q.RetentionSeconds != 3600 || q.MaxCancels != 3 || q.MaxMessageBytes != 4096 {
		t.Fatalf("update queue: %+v %v", q, err)
	}
	q, err = c.UpdateQueue(ctx, "orders", client.UpdateQueueInput{Redrive: &client.Redrive{DeadLetterQueue: dlq.Slug, MaxReceiveCount: 2}})
	if err != nil || q.Redrive == nil || q.Redrive.MaxReceiveCount != 2 {
		t.Fatalf("update queue redrive: %+v %v", q, err)
	}

	// Messages.
	sent, err := c.Send(ctx, "orders", client.SendMessage{Body: `{"orderId": 42}`, Attributes: map[string]string{"contentType": "application/json"}})
	if err != nil || sent.MessageID == "" || sent.Duplicate {
		t.Fatalf("send: %+v %v", sent, err)
	}
	res, err := c.SendBatch(ctx, "orders", []client.SendMessage{{Body: "two"}, {Body: "late", DelaySeconds: 3601}, {Body: "three"}, {Body: "delayed", DelaySeconds: 600}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 3 || len(res.Failed) != 1 || res.Failed[0].Index != 1 {
		t.Fatalf("send batch: %+v", res)
	}
	mustCode(t, res.Failed[0].Err, client.CodeInvalidArgument, 400, "messages[1].delaySeconds")
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "message 1") {
		t.Fatalf("SendResult.Err: %v", err)
	}
	if _, err := c.Send(ctx, "orders", client.SendMessage{Body: "x", GroupID: "g"}); !client.IsInvalid(err) {
		t.Fatalf("send with a group to a standard queue: %v", err)
	}
	// Conflation, scheduling and delete by id (docs/lifecycle.md).
	k1, err := c.Send(ctx, "orders", client.SendMessage{Body: `{"a":1}`, Key: "order-7", Merge: client.MergePatch, DeliverAt: time.Now().Add(time.Hour)})
	if err != nil || k1.Merged {
		t.Fatalf("keyed send: %+v %v", k1, err)
	}
	k2, err := c.Send(ctx, "orders", client.SendMessage{Body: `{"b":2}`, Key: "order-7", Merge: client.MergePatch})
	if err != nil || !k2.Merged || k2.MessageID != k1.MessageID {
		t.Fatalf("merged send: %+v %v, want merged into %s", k2, err, k1.MessageID)
	}
	if bp, err := c.Browse(ctx, "orders", client.BrowseInput{State: client.StateDelayed}); err != nil || len(bp.Messages) != 2 {
		t.Fatalf("browse delayed with the keyed message: %+v %v", bp, err)
	} else if got := map[string]string{bp.Messages[0].MessageID: bp.Messages[0].Body, bp.Messages[1].MessageID: bp.Messages[1].Body}; got[k1.MessageID] != `{"a":1,"b":2}` {
		t.Fatalf("the merged message: %v", got)
	}
	if err := c.DeleteMessage(ctx, "orders", k1.MessageID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteMessage(ctx, "orders", k1.MessageID); !client.IsNotFound(err) {
		t.Fatalf("delete a deleted message: %v", err)
	}
	bp, err := c.Browse(ctx, "orders", client.BrowseInput{State: client.StateVisible, Page: client.Page{Limit: 2}})
	if err != nil || len(bp.Messages) != 2 || bp.NextCursor == nil || bp.Messages[0].State != client.StateVisible {
		t.Fatalf("browse: %+v %v", bp, err)
	}
	if bp, err := c.Browse(ctx, "orders", client.BrowseInput{State: client.StateDelayed}); err != nil || len(bp.Messages) != 1 || bp.Messages[0].Body != "delayed" {
		t.Fatalf("browse delayed: %+v %v", bp, err)
	}
	msgs, err := c.Receive(ctx, "orders", client.ReceiveInput{MaxMessages: 10, VisibilityTimeoutSeconds: client.Int(30), WaitSeconds: client.Int(0)})
	if err != nil || len(msgs) != 3 {
		t.Fatalf("receive: %d %v", len(msgs), err)
	}
	byBody := map[string]client.Message{}
	for _, m := range msgs {
		byBody[m.Body] = m
		if m.ReceiptHandle == "" || m.ReceiveCount != 1 || m.SentAt.IsZero() || !m.VisibilityDeadline.After(m.SentAt) {
			t.Fatalf("received message: %+v", m)
		}
	}
	if a := byBody[`{"orderId": 42}`].Attributes; a["contentType"] != "application/json" {
		t.Fatalf("attributes: %v", a)
	}
	if err := c.DeleteMessage(ctx, "orders", byBody["two"].MessageID); client.CodeOf(err) != client.CodeMessageInFlight || !client.IsConflict(err) {
		t.Fatalf("delete a message in flight: %v", err)
	}
	if got, err := c.Receive(ctx, "orders", client.ReceiveInput{WaitSeconds: client.Int(0)}); err != nil || len(got) != 0 {
		t.Fatalf("receive from a drained queue: %v %v", got, err)
	}

	// The receive stream's upgrade (its frames: TestStreamSemantics).
	if st, err := c.Stream(ctx, "orders", client.StreamOptions{MaxMessages: 10, VisibilityTimeoutSeconds: client.Int(30)}); err != nil {
		t.Fatalf("stream: %v", err)
	} else if err := st.Close(); err != nil {
		t.Fatalf("closing the stream: %v", err)
	}

	// The send stream, through a Producer (its frames: TestProducer*, tests/e2e TestSendStream).
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "produced"}); err != nil {
		t.Fatal(err)
	}
	prod := c.NewProducer("produced", client.ProducerOptions{})
	if _, err := prod.Send(ctx, client.SendMessage{Body: "produced"}).Wait(ctx); err != nil {
		t.Fatalf("producer: %v", err)
	}
	if err := prod.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Receipts: single and batch forms.
	anon := c.WithToken("") // the handle is the credential
	one, two, three := byBody[`{"orderId": 42}`], byBody["two"], byBody["three"]
	if err := anon.ChangeVisibility(ctx, one.ReceiptHandle, 120); err != nil {
		t.Fatal(err)
	}
	be, err := anon.ChangeVisibilityBatch(ctx, []client.VisibilityEntry{{ReceiptHandle: two.ReceiptHandle, VisibilityTimeoutSeconds: 60}, {ReceiptHandle: "garbage", VisibilityTimeoutSeconds: 1}})
	if err != nil || be[0] != nil || !errors.Is(be[1], client.ErrReceiptInvalid) || be.Err() == nil {
		t.Fatalf("visibility batch: %v %v", be, err)
	}
	if err := anon.Ack(ctx, one.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	be, err = anon.AckBatch(ctx, []string{two.ReceiptHandle, one.ReceiptHandle})
	if err != nil || be[0] != nil || !client.IsStale(be[1]) {
		t.Fatalf("ack batch: %v %v", be, err)
	}
	if err := anon.Release(ctx, three.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	msgs, err = c.Receive(ctx, "orders", client.ReceiveInput{WaitSeconds: client.Int(1)})
	if err != nil || len(msgs) != 1 || msgs[0].Body != "three" || msgs[0].ReceiveCount != 2 {
		t.Fatalf("receive after release: %+v %v", msgs, err)
	}
	// A cancel returns it uncounted (docs/delivery-options.md#cancel).
	if err := anon.Cancel(ctx, msgs[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	msgs, err = c.Receive(ctx, "orders", client.ReceiveInput{WaitSeconds: client.Int(1)})
	if err != nil || len(msgs) != 1 || msgs[0].Body != "three" || msgs[0].ReceiveCount != 2 {
		t.Fatalf("receive after cancel: %+v %v", msgs, err)
	}
	if be, err := anon.CancelBatch(ctx, []string{one.ReceiptHandle}); err != nil || !client.IsStale(be[0]) {
		t.Fatalf("cancel batch: %v %v", be, err)
	}
	if err := anon.DeadLetter(ctx, msgs[0].ReceiptHandle, "bad order"); err != nil {
		t.Fatal(err)
	}
	dl, err := c.Receive(ctx, dlq.ID, client.ReceiveInput{WaitSeconds: client.Int(0)})
	if err != nil || len(dl) != 1 || dl[0].DeadLetter == nil || dl[0].DeadLetter.Reason != "bad order" || dl[0].DeadLetter.SourceQueue != q.ID {
		t.Fatalf("dead-lettered message: %+v %v", dl, err)
	}
	be, err = anon.DeadLetterBatch(ctx, []client.DeadLetterEntry{{ReceiptHandle: dl[0].ReceiptHandle}, {ReceiptHandle: one.ReceiptHandle, Reason: "again"}})
	if err != nil || be[0] != nil || !client.IsStale(be[1]) {
		t.Fatalf("dead-letter batch: %v %v", be, err)
	}

	// Groups (fifo), with a group id that needs escaping in the path.
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "pay", Type: client.FIFO, ContentBasedDedup: true}); err != nil {
		t.Fatal(err)
	}
	r1, err := c.Send(ctx, "pay", client.SendMessage{Body: "a", GroupID: "customer/7?#%"})
	if err != nil {
		t.Fatal(err)
	}
	if r2, err := c.Send(ctx, "pay", client.SendMessage{Body: "a", GroupID: "customer/7?#%"}); err != nil || !r2.Duplicate || r2.MessageID != r1.MessageID ||
		r2.SequenceNumber == "" || r2.SequenceNumber != r1.SequenceNumber {
		t.Fatalf("content-based dedup: %+v %v (first %+v)", r2, err, r1)
	}
	sent2, err := c.Send(ctx, "pay", client.SendMessage{Body: "b", GroupID: "g2", DedupID: "d-1"})
	if err != nil {
		t.Fatal(err)
	}
	gp, err := c.ListGroups(ctx, "pay", client.Page{Limit: 10})
	if err != nil || len(gp.Groups) != 2 {
		t.Fatalf("groups: %+v %v", gp, err)
	}
	if err := c.DeleteGroup(ctx, "pay", "customer/7?#%"); err != nil {
		t.Fatal(err)
	}
	if gp, err := c.ListGroups(ctx, "pay", client.Page{}); err != nil || len(gp.Groups) != 1 || gp.Groups[0].GroupID != "g2" {
		t.Fatalf("groups after deleting one: %+v %v", gp, err)
	}
	mustCode(t, c.ReleaseGroup(ctx, "pay", "g2"), client.CodeGroupNotParked, 409, "groupId") // the flow: TestPoisonPolicy
	// Consumers: a bounded consumer's receive stays within its backlog; it is listed.
	if _, err := c.UpdateQueue(ctx, "pay", client.UpdateQueueInput{Fairness: client.FairnessRoundRobin}); err != nil {
		t.Fatal(err)
	}
	cm, err := c.Receive(ctx, "pay", client.ReceiveInput{WaitSeconds: client.Int(0), MaxMessages: 10, ConsumerID: "w-1", MaxBacklog: 1})
	if err != nil || len(cm) != 1 {
		t.Fatalf("consumer receive: %+v %v", cm, err)
	}
	if err := c.ChangeVisibility(ctx, cm[0].ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	if cp, err := c.ListConsumers(ctx, "pay", client.Page{Limit: 10}); err != nil || len(cp.Consumers) != 1 ||
		cp.Consumers[0].ConsumerID != "w-1" || cp.Consumers[0].InFlight != 0 || *cp.Consumers[0].MaxBacklog != 1 || cp.NextCursor != nil {
		t.Fatalf("consumers: %+v %v", cp, err)
	}
	fm, err := c.Receive(ctx, "pay", client.ReceiveInput{WaitSeconds: client.Int(0)})
	if err != nil || len(fm) != 1 || fm[0].GroupID != "g2" || fm[0].SequenceNumber == "" || fm[0].SequenceNumber != sent2.SequenceNumber {
		t.Fatalf("fifo receive: %+v %v", fm, err)
	}

	// Move tasks: a dry run, a task moving orders-dlq's messages to orders, read, listed and
	// cancelled (a finished one answers as it is).
	if _, err := c.Send(ctx, "orders-dlq", client.SendMessage{Body: "replay me"}); err != nil {
		t.Fatal(err)
	}
	dry, err := c.StartMoveTask(ctx, "orders-dlq", client.StartMoveTaskInput{Destination: "orders", DryRun: true,
		Filter: &client.MoveFilter{Attributes: map[string][]string{}}})
	if err != nil || !dry.DryRun || dry.Status != "completed" || dry.ToMove != 1 || dry.Moved != 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	mt, err := c.StartMoveTask(ctx, "orders-dlq", client.StartMoveTaskInput{Destination: "orders", MaxMessagesPerSecond: client.Int(10000)})
	if err != nil || mt.Status != "running" {
		t.Fatalf("start move task: %+v %v", mt, err)
	}
	for mt.Status == "running" {
		if mt, err = c.GetMoveTask(ctx, "orders-dlq", mt.ID); err != nil {
			t.Fatal(err)
		}
	}
	if mp, err := c.ListMoveTasks(ctx, "orders-dlq", client.Page{Limit: 5}); err != nil || len(mp.MoveTasks) != 1 || mp.MoveTasks[0].Moved != 1 || mp.MoveTasks[0].ToMove != 1 || mp.NextCursor != nil {
		t.Fatalf("list move tasks: %+v %v", mp, err)
	}
	if ct, err := c.CancelMoveTask(ctx, "orders-dlq", mt.ID); err != nil || ct.Status != "completed" {
		t.Fatalf("cancel a finished move task: %+v %v", ct, err)
	}

	// Purge and delete.
	at, err := c.PurgeQueue(ctx, "orders")
	if err != nil || at.IsZero() {
		t.Fatalf("purge: %v %v", at, err)
	}
	if n := tn.counts(t, "orders"); n.Visible+n.InFlight+n.Delayed != 0 {
		t.Fatalf("counts after purge: %+v", n)
	}
	subscriptionRoutes(t, subscriptionClient(t, tn, c))
	if err := c.DeleteQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetQueue(ctx, "orders"); !client.IsNotFound(err) {
		t.Fatalf("get a deleted queue: %v", err)
	}
	tenancyRoutes(t, tn)
	topicRoutes(t, c)
	topicStreamRoute(t, c)
	chk.RequireAll(t)
}

// topicStreamRoute opens a topic stream's upgrade and closes it (its frames:
// TestTopicStreamReconnects).
func topicStreamRoute(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "every-stream"}); err != nil {
		t.Fatal(err)
	}
	st, err := c.OpenTopicStream(ctx, "every-stream", client.TopicStreamOptions{From: client.FromEarliest})
	if err != nil {
		t.Fatalf("topic stream: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("closing the topic stream: %v", err)
	}
	if err := c.DeleteTopic(ctx, "every-stream"); err != nil {
		t.Fatal(err)
	}
}

// subscriptionClient is c when openapi.yaml documents the push subscription routes, else a
// client for the same project whose traffic is not checked against the spec.
func subscriptionClient(t *testing.T, tn *tenant, c *client.Client) *client.Client {
	if hasOperation(t, "createSubscription") {
		return c
	}
	t.Log("openapi.yaml does not document the push subscription routes yet: their exchanges are not validated against it")
	plain, err := client.New(srv.URL, client.WithToken(tn.token(t, client.ScopeAll)))
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// subscriptionRoutes exercises the push subscription routes.
func subscriptionRoutes(t *testing.T, c *client.Client) {
	ctx := t.Context()
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "pushed"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateSubscription(ctx, "pushed", client.SubscriptionInput{Endpoint: "https://example.com/hook", BatchSize: client.Int(5), Paused: client.Bool(true)})
	if err != nil || !strings.HasPrefix(s.SigningSecret, "whsec_") || s.BatchSize != 5 || !s.Paused {
		t.Fatalf("create subscription: %+v %v", s, err)
	}
	_, err = c.CreateSubscription(ctx, "pushed", client.SubscriptionInput{Endpoint: "https://example.com/hook"})
	mustCode(t, err, client.CodeSubscriptionExists, 409, "")
	if g, err := c.GetSubscription(ctx, "pushed"); err != nil || g.ID != s.ID || g.SigningSecret != "" || g.Endpoint != "https://example.com/hook" {
		t.Fatalf("get subscription: %+v %v", g, err)
	}
	if r, err := c.ResumeSubscription(ctx, "pushed"); err != nil || r.Paused {
		t.Fatalf("resume: %+v %v", r, err)
	}
	if r, err := c.PauseSubscription(ctx, "pushed"); err != nil || !r.Paused {
		t.Fatalf("pause: %+v %v", r, err)
	}
	fc := &client.FlowControl{KeyAttribute: "customer", Parallelism: 2, MessagesPerSecond: 10}
	if r, err := c.UpdateSubscription(ctx, "pushed", client.SubscriptionInput{MaxMessagesPerSecond: client.Int(50), FlowControl: fc}); err != nil ||
		r.MaxMessagesPerSecond != 50 || r.FlowControl == nil || *r.FlowControl != *fc || len(r.Extra) != 0 {
		t.Fatalf("flow control: %+v %v", r, err)
	}
	if r, err := c.UpdateSubscription(ctx, "pushed", client.SubscriptionInput{NoFlowControl: true}); err != nil || r.FlowControl != nil || r.MaxMessagesPerSecond != 50 {
		t.Fatalf("flow control off: %+v %v", r, err)
	}
	if r, err := c.RotateSecret(ctx, "pushed"); err != nil || !strings.HasPrefix(r.SigningSecret, "whsec_") || r.SigningSecret == s.SigningSecret {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	if a, err := c.ListAttempts(ctx, "pushed", 10); err != nil || a == nil {
		t.Fatalf("attempts: %+v %v", a, err)
	}
	if err := c.DeleteSubscription(ctx, "pushed"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSubscription(ctx, "pushed"); !client.IsNotFound(err) {
		t.Fatalf("get a deleted subscription: %v", err)
	}
}

// Every error code the service answers reaches the caller as an *Error with its code,
// message, status and field; errors.Is and the helpers match it.
func TestErrorCodes(t *testing.T) {
	ctx := t.Context()
	chk := openapicheck.NewChecker(t, srv.URL)
	tn := newTenant(t, checked(chk))
	c := tn.c
	noRetry := client.WithRetry(client.RetryPolicy{MaxAttempts: 1})

	_, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "bad name"})
	mustCode(t, err, client.CodeInvalidArgument, 400, "name")
	if !errors.Is(err, client.ErrInvalidArgument) || !client.IsInvalid(err) {
		t.Fatal("invalid_argument: errors.Is / IsInvalid")
	}

	dlq := tn.queue(t, client.CreateQueueInput{Name: "dlq"})
	tn.queue(t, client.CreateQueueInput{Name: "q", Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5}})

	huge := strings.Repeat("x", 3<<20)
	_, err = c.SendBatch(ctx, "q", []client.SendMessage{{Body: huge}})
	mustCode(t, err, client.CodePayloadTooLarge, 413, "")
	_, err = c.Send(ctx, "q", client.SendMessage{Body: huge[:300<<10]})
	mustCode(t, err, client.CodePayloadTooLarge, 413, "")

	err = c.Do(ctx, http.MethodPost, "/v1/queues", nil, client.RawBody{ContentType: "text/plain", Data: []byte(`{"name":"x"}`)}, nil)
	mustCode(t, err, client.CodeUnsupportedMediaType, 415, "")

	_, err = c.WithToken("not-a-token").GetQueue(ctx, "q")
	mustCode(t, err, client.CodeUnauthenticated, 401, "")
	if !errors.Is(err, client.ErrUnauthenticated) || !client.IsAuth(err) {
		t.Fatal("unauthenticated: errors.Is / IsAuth")
	}
	_, err = c.WithToken(tn.token(t, client.ScopeMessagesSend)).CreateQueue(ctx, client.CreateQueueInput{Name: "nope"})
	mustCode(t, err, client.CodePermissionDenied, 403, "")
	if !errors.Is(err, client.ErrPermissionDenied) || !client.IsAuth(err) {
		t.Fatal("permission_denied: errors.Is / IsAuth")
	}

	_, err = c.GetQueue(ctx, "missing")
	mustCode(t, err, client.CodeNotFound, 404, "")
	if !errors.Is(err, client.ErrNotFound) || !client.IsNotFound(err) {
		t.Fatal("not_found: errors.Is / IsNotFound")
	}

	err = c.Do(ctx, http.MethodPut, "/v1/queues", nil, nil, nil)
	mustCode(t, err, client.CodeMethodNotAllowed, 405, "")

	_, err = c.CreateQueue(ctx, client.CreateQueueInput{Name: "q"})
	mustCode(t, err, client.CodeQueueExists, 409, "name")
	if !errors.Is(err, client.ErrQueueExists) || !client.IsConflict(err) {
		t.Fatal("queue_exists: errors.Is / IsConflict")
	}
	err = c.DeleteQueue(ctx, "dlq")
	mustCode(t, err, client.CodeQueueInUse, 409, "")
	if !errors.Is(err, client.ErrQueueInUse) || !client.IsConflict(err) {
		t.Fatal("queue_in_use: errors.Is / IsConflict")
	}

	err = c.Ack(ctx, "garbage")
	mustCode(t, err, client.CodeReceiptHandleInvalid, 400, "receiptHandle")
	if !errors.Is(err, client.ErrReceiptInvalid) || !client.IsInvalid(err) {
		t.Fatal("receipt_handle_invalid: errors.Is / IsInvalid")
	}
	tn.send(t, "q", "m")
	msgs, err := c.Receive(ctx, "q", client.ReceiveInput{WaitSeconds: client.Int(1)})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %v %v", msgs, err)
	}
	h := msgs[0].ReceiptHandle
	err = c.ChangeVisibility(ctx, h, 43200)
	mustCode(t, err, client.CodeVisibilityLimitExceeded, 400, "")
	if !client.IsInvalid(err) {
		t.Fatal("visibility_limit_exceeded: IsInvalid")
	}
	if err := c.Ack(ctx, h); err != nil {
		t.Fatal(err)
	}
	err = c.Ack(ctx, h)
	mustCode(t, err, client.CodeReceiptHandleStale, 410, "")
	if !errors.Is(err, client.ErrStale) || !client.IsStale(err) {
		t.Fatal("receipt_handle_stale: errors.Is / IsStale")
	}

	if _, err := c.PurgeQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.PurgeQueue(ctx, "q") // not retried: waiting a minute is the caller's choice
	e := mustCode(t, err, client.CodePurgeTooSoon, 429, "")
	if e.RetryAfter <= 0 || time.Since(start) > 5*time.Second || !errors.Is(err, client.ErrPurgeTooSoon) || !client.IsTemporary(err) {
		t.Fatalf("purge_too_soon: retry after %v, took %v", e.RetryAfter, time.Since(start))
	}

	sc := subscriptionClient(t, tn, c)
	tn.queue(t, client.CreateQueueInput{Name: "s"})
	if _, err := sc.CreateSubscription(ctx, "s", client.SubscriptionInput{Endpoint: "https://example.com/a", Paused: client.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = sc.CreateSubscription(ctx, "s", client.SubscriptionInput{Endpoint: "https://example.com/a"})
	mustCode(t, err, client.CodeSubscriptionExists, 409, "")
	if !errors.Is(err, client.ErrSubscriptionExists) || !client.IsConflict(err) {
		t.Fatal("subscription_exists: errors.Is / IsConflict")
	}
	_, err = sc.UpdateSubscription(ctx, "s", client.SubscriptionInput{BatchSize: client.Int(101)})
	mustCode(t, err, client.CodeInvalidArgument, 400, "batchSize")

	// move_task_running: a second task on dlq while one moves its messages at one a second.
	for _, b := range []string{"m1", "m2", "m3", "m4", "m5"} {
		if _, err := c.Send(ctx, "dlq", client.SendMessage{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	running, err := c.StartMoveTask(ctx, "dlq", client.StartMoveTaskInput{Destination: "q", MaxMessagesPerSecond: client.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StartMoveTask(ctx, "dlq", client.StartMoveTaskInput{Destination: "q"})
	mustCode(t, err, client.CodeMoveTaskRunning, 409, "")
	if !errors.Is(err, client.ErrMoveTaskRunning) || !client.IsConflict(err) {
		t.Fatal("move_task_running: errors.Is / IsConflict")
	}
	if _, err := c.CancelMoveTask(ctx, "dlq", running.ID); err != nil {
		t.Fatal(err)
	}

	// rate_limited: a replica allowing one request per second per queue. Without retries the
	// second send fails with Retry-After; with them it waits and succeeds.
	url, closeReplica, err := srv.Replica(ctx, stack.Options{Rates: api.Rates{StandardSend: 1, StandardReceive: 1, FIFOSend: 1, FIFOReceive: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	slow, err := client.New(url, client.WithToken(tn.token(t, client.ScopeAll)), noRetry)
	if err != nil {
		t.Fatal(err)
	}
	var limited error
	for range 5 {
		if _, limited = slow.Send(ctx, "q", client.SendMessage{Body: "r"}); limited != nil {
			break
		}
	}
	e = mustCode(t, limited, client.CodeRateLimited, 429, "")
	if e.RetryAfter <= 0 || !errors.Is(limited, client.ErrRateLimited) || !client.IsTemporary(limited) {
		t.Fatalf("rate_limited: %+v", e)
	}
	patient, err := client.New(url, client.WithToken(tn.token(t, client.ScopeAll)))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := patient.Send(ctx, "q", client.SendMessage{Body: "r"}); err != nil {
			t.Fatalf("send with retries on a rate-limited queue: %v", err)
		}
	}

	// unavailable: a replica whose DynamoDB is gone is not ready.
	deadURL, closeDead, err := srv.Replica(ctx, stack.Options{Dynamo: deadDynamo(t), SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDead()
	dead, err := client.New(deadURL, noRetry)
	if err != nil {
		t.Fatal(err)
	}
	err = dead.Ready(ctx)
	mustCode(t, err, client.CodeUnavailable, 503, "")
	if !errors.Is(err, client.ErrUnavailable) || !client.IsTemporary(err) {
		t.Fatal("unavailable: errors.Is / IsTemporary")
	}
	// internal is never an answer to anything a client can send; TestErrorDecoding covers
	// its decoding.
}

// Retries: 429 rate_limited and 503 unavailable are retried up to MaxAttempts, waiting at
// least Retry-After; other errors, and a Retry-After over MaxRetryAfter, are not. A fake
// server counts the attempts.
func TestRetries(t *testing.T) {
	var calls atomic.Int32
	var answer atomic.Value // func(w, n)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		answer.Load().(func(http.ResponseWriter, int32))(w, n)
	}))
	defer fake.Close()
	fail := func(status int, code, retryAfter string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"m"}}`))
		}
	}
	ok := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}
	c, err := client.New(fake.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxRetryAfter: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		answer    func(http.ResponseWriter, int32)
		wantCalls int32
		wantCode  client.Code
		minWait   time.Duration
	}{
		{"429 then ok", func(w http.ResponseWriter, n int32) {
			if n == 1 {
				fail(429, "rate_limited", "0")(w)
			} else {
				ok(w)
			}
		}, 2, "", 0},
		{"503 twice then ok, honouring Retry-After", func(w http.ResponseWriter, n int32) {
			if n <= 2 {
				fail(503, "unavailable", map[int32]string{1: "0", 2: "1"}[n])(w)
			} else {
				ok(w)
			}
		}, 3, "", time.Second},
		{"503 always: gives up after MaxAttempts", func(w http.ResponseWriter, n int32) { fail(503, "unavailable", "0")(w) }, 3, client.CodeUnavailable, 0},
		{"Retry-After beyond the bound: not waited for", func(w http.ResponseWriter, n int32) { fail(429, "rate_limited", "60")(w) }, 1, client.CodeRateLimited, 0},
		{"purge_too_soon is not retried", func(w http.ResponseWriter, n int32) { fail(429, "purge_too_soon", "0")(w) }, 1, client.CodePurgeTooSoon, 0},
		{"other errors are not retried", func(w http.ResponseWriter, n int32) { fail(400, "invalid_argument", "")(w) }, 1, client.CodeInvalidArgument, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			answer.Store(tc.answer)
			start := time.Now()
			err := c.Health(t.Context())
			if calls.Load() != tc.wantCalls || client.CodeOf(err) != tc.wantCode {
				t.Fatalf("%d calls, error %v; want %d calls, code %q", calls.Load(), err, tc.wantCalls, tc.wantCode)
			}
			if el := time.Since(start); el < tc.minWait {
				t.Fatalf("took %v, want at least %v", el, tc.minWait)
			}
		})
	}
	t.Run("a cancelled context stops the wait", func(t *testing.T) {
		calls.Store(0)
		answer.Store(func(w http.ResponseWriter, n int32) { fail(503, "unavailable", "2")(w) })
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := c.Health(ctx); client.CodeOf(err) != client.CodeUnavailable || time.Since(start) > time.Second {
			t.Fatalf("error %v after %v", err, time.Since(start))
		}
	})
}

// An error answer decodes whatever its body: the API's error model, or a proxy's page.
func TestErrorDecoding(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/internal":
			w.Header().Set("X-Request-Id", "req-1")
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"error":{"code":"internal","message":"internal error","details":{"field":"x","extra":1}}}`))
		default:
			w.WriteHeader(502)
			_, _ = w.Write([]byte("<html>bad gateway</html>"))
		}
	}))
	defer fake.Close()
	c, _ := client.New(fake.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	err := c.Do(t.Context(), "GET", "/internal", nil, nil, nil)
	e := mustCode(t, err, client.CodeInternal, 500, "x")
	if e.RequestID != "req-1" || e.Details["extra"] != float64(1) || !strings.Contains(err.Error(), "internal (500): internal error [x]") {
		t.Fatalf("decoded %#v: %v", e, err)
	}
	err = c.Do(t.Context(), "GET", "/proxy", nil, nil, nil)
	mustCode(t, err, client.CodeUnavailable, 502, "")
}

// The receive stream's semantics on the Redis engine (serve's: services/queues/embedded).
func TestStreamSemantics(t *testing.T) {
	stacktest.StreamSemantics(t, newTenant(t).c)
}

package main

import (
	"fmt"

	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

const fakeReplay = `{"id":"r1","topicId":"t1","topic":"prices","queueId":"q1","queue":"rebuild","from":3,"to":9,
"filter":{"attributes":{"region":["eu"]}},"status":"%s","moved":%s,"toMove":4,"failed":0,"maxMessagesPerSecond":500,"dryRun":%s,
"startedAt":"2026-12-04T10:00:00Z","finishedAt":%s}`

func replayAnswer(status, moved, dry, finished string) string {
	return fmt.Sprintf(fakeReplay, status, moved, dry, finished)
}

// The replay commands against a fake speaking the documented shapes: what each sends, what
// it prints, and its exit codes.
func TestCLIReplayWire(t *testing.T) {
	done := replayAnswer("completed", "4", "false", `"2026-12-04T10:00:01Z"`)
	e, f := newTopicFake(t, map[string]string{
		"POST /v1/topics/prices/replays":           "201 " + replayAnswer("running", "0", "false", "null"),
		"POST /v1/topics/dry/replays":              "200 " + replayAnswer("completed", "0", "true", `"2026-12-04T10:00:00Z"`),
		"POST /v1/topics/busy/replays":             `409 {"error":{"code":"move_task_running","message":"queue \"rebuild\" has a running move task or replay"}}`,
		"GET /v1/topics/prices/replays":            `200 {"replays":[` + done + `],"nextCursor":null}`,
		"GET /v1/topics/prices/replays/r1":         "200 " + done,
		"POST /v1/topics/prices/replays/r1/cancel": "200 " + replayAnswer("cancelled", "2", "false", `"2026-12-04T10:00:01Z"`),
	})
	e.run(t, "", "topic", "replay", "start", "prices", "--queue", "rebuild", "--from", "3", "--to", "2026-12-04T11:00:00Z", "--filter", "region=eu", "--rate", "50").ok(t).
		has(t, "started replay r1 of prices 3..9 into rebuild (4 to replay so far)")
	f.sent(t, `POST /v1/topics/prices/replays {"queue":"rebuild","from":"3","to":"2026-12-04T11:00:00Z","filter":{"attributes":{"region":["eu"]}},"maxMessagesPerSecond":50}`)
	e.run(t, "", "topic", "replay", "start", "prices", "--queue", "rebuild", "--from", "3", "--wait").ok(t).has(t, "status: completed", "replayed: 4 of 4", "filter: region=eu")
	e.run(t, "", "topic", "replay", "start", "dry", "--queue", "rebuild", "--from", "3", "--dry-run").ok(t).has(t, "dry run: 4 of sequences 3..9 would be replayed")
	f.sent(t, `POST /v1/topics/dry/replays {"queue":"rebuild","from":"3","dryRun":true}`)
	e.run(t, "", "topic", "replay", "start", "busy", "--queue", "rebuild", "--from", "1").fails(t, exitConflict, "move_task_running")
	e.run(t, "", "topic", "replay", "start", "prices", "--from", "1").fails(t, exitUsage, "--queue is required")
	e.run(t, "", "topic", "replay", "start", "prices", "--queue", "rebuild").fails(t, exitUsage, "--from is required")
	e.run(t, "", "topic", "replay", "list", "prices").ok(t).has(t, "ID STATUS RANGE REPLAYED TO REPLAY FAILED QUEUE STARTED FINISHED",
		"r1 completed 3..9 4 4 0 rebuild 2026-12-04T10:00:00Z 2026-12-04T10:00:01Z")
	if rs := jsonOf[[]client.Replay](t, e.run(t, "", "topic", "replay", "list", "prices", "--json").ok(t)); len(rs) != 1 || rs[0].Moved != 4 {
		t.Fatalf("replay list --json: %+v", rs)
	}
	e.run(t, "", "topic", "replay", "get", "prices", "r1").ok(t).has(t, "replay: r1", "range: 3..9")
	e.run(t, "", "topic", "replay", "cancel", "prices", "r1").ok(t).has(t, "status: cancelled", "replayed: 2 of 4")
}

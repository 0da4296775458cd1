package sqs

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// MoveTasks is what the door needs of the service's move tasks (docs/redrive.md), mapped onto SQS's
// StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask.
type MoveTasks interface {
	StartMoveTask(ctx context.Context, src meta.Queue, req service.MoveTaskRequest) (meta.MoveTask, error)
	ListMoveTasks(ctx context.Context, src meta.Queue, page meta.Page) ([]meta.MoveTask, string, error)
	GetMoveTask(ctx context.Context, src meta.Queue, id ids.ID) (meta.MoveTask, error)
	CancelMoveTask(ctx context.Context, t meta.MoveTask) (meta.MoveTask, error)
}

var (
	errResourceNotFound = errKind{"ResourceNotFoundException", "ResourceNotFoundException", 400, true}
	errUnsupportedOp    = errKind{"UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", 400, true}
)

// SQS's range of MaxNumberOfMessagesPerSecond is 1–500; this service allows up to 10,000,
// and without the parameter the task runs at the default of 500 a second (docs/redrive.md).
const (
	sqsMoveRateMax     = 10_000
	sqsMoveRateDefault = 500
)

// taskHandle names a task and its source: base64url("<task id>|<source queue name>").
func taskHandle(t meta.MoveTask, source string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.ID.String() + "|" + source))
}

func parseTaskHandle(h string) (ids.ID, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return ids.ID{}, "", false
	}
	id, name, ok := strings.Cut(string(b), "|")
	tid, perr := ids.ParseUUID(id)
	return tid, name, ok && perr == nil && name != ""
}

// arnQueue resolves a queue ARN parameter of the caller's project.
func (d *Door) arnQueue(c *call, param, arn string) (meta.Queue, error) {
	if arn == "" {
		return meta.Queue{}, missingParam(param)
	}
	name := c.arnQueueName(arn)
	if name == "" {
		return meta.Queue{}, invalidParam(param, "not a queue ARN of this account")
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	q, err := d.cfg.Backend.QueueByName(ctx, c.principal.ProjectID, name)
	if apierr.CodeOf(err) == apierr.NotFound {
		return meta.Queue{}, newErr(errResourceNotFound, "The resource that you specified for the %s parameter doesn't exist.", param)
	}
	return q, err
}

func (d *Door) startMessageMoveTask(c *call) (any, error) {
	var in struct {
		SourceArn                    string `json:"SourceArn"`
		DestinationArn               string `json:"DestinationArn"`
		MaxNumberOfMessagesPerSecond optInt `json:"MaxNumberOfMessagesPerSecond"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	rate, perr := in.MaxNumberOfMessagesPerSecond.within("MaxNumberOfMessagesPerSecond", 1, sqsMoveRateMax, sqsMoveRateDefault)
	if perr != nil {
		return nil, perr
	}
	src, err := d.arnQueue(c, "SourceArn", in.SourceArn)
	if err != nil {
		return nil, err
	}
	var dst *meta.Queue
	if in.DestinationArn != "" {
		q, err := d.arnQueue(c, "DestinationArn", in.DestinationArn)
		if err != nil {
			return nil, err
		}
		dst = &q
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	t, err := d.cfg.MoveTasks.StartMoveTask(ctx, src, service.MoveTaskRequest{Destination: dst, Rate: int(rate), Action: meta.ActionMove})
	switch apierr.CodeOf(err) {
	case apierr.MoveTaskRunning:
		return nil, newErr(errUnsupportedOp, "There is already a task running. Only one active task is allowed for each source queue arn at a given time.")
	case apierr.InvalidArgument, apierr.NotFound:
		return nil, invalidParam("DestinationArn", "%s", apierr.As(service.Answer(err)).Message)
	}
	if err != nil {
		return nil, err
	}
	return struct {
		TaskHandle string `json:"TaskHandle" xml:"TaskHandle"`
	}{taskHandle(t, src.Name)}, nil
}

type moveTaskEntry struct {
	TaskHandle                        string `json:"TaskHandle,omitempty" xml:"TaskHandle,omitempty"`
	Status                            string `json:"Status" xml:"Status"`
	SourceArn                         string `json:"SourceArn" xml:"SourceArn"`
	DestinationArn                    string `json:"DestinationArn,omitempty" xml:"DestinationArn,omitempty"`
	MaxNumberOfMessagesPerSecond      int    `json:"MaxNumberOfMessagesPerSecond,omitempty" xml:"MaxNumberOfMessagesPerSecond,omitempty"`
	ApproximateNumberOfMessagesMoved  int64  `json:"ApproximateNumberOfMessagesMoved" xml:"ApproximateNumberOfMessagesMoved"`
	ApproximateNumberOfMessagesToMove int64  `json:"ApproximateNumberOfMessagesToMove" xml:"ApproximateNumberOfMessagesToMove"`
	FailureReason                     string `json:"FailureReason,omitempty" xml:"FailureReason,omitempty"`
	StartedTimestamp                  int64  `json:"StartedTimestamp" xml:"StartedTimestamp"`
}

func (d *Door) listMessageMoveTasks(c *call) (any, error) {
	var in struct {
		SourceArn  string `json:"SourceArn"`
		MaxResults optInt `json:"MaxResults"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	limit, perr := in.MaxResults.within("MaxResults", 1, 10, 1)
	if perr != nil {
		return nil, perr
	}
	src, err := d.arnQueue(c, "SourceArn", in.SourceArn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	ts, _, err := d.cfg.MoveTasks.ListMoveTasks(ctx, src, meta.Page{Limit: int(limit)})
	if err != nil {
		return nil, err
	}
	out := struct {
		Results []moveTaskEntry `json:"Results" xml:"ListMessageMoveTasksResultEntry"`
	}{Results: []moveTaskEntry{}}
	for _, t := range ts {
		e := moveTaskEntry{
			Status: strings.ToUpper(t.Status), SourceArn: c.queueARN(src.Name), MaxNumberOfMessagesPerSecond: t.MaxPerSecond,
			ApproximateNumberOfMessagesMoved: t.Moved, ApproximateNumberOfMessagesToMove: t.ToMove,
			FailureReason: t.Error, StartedTimestamp: t.StartedAt.UnixMilli(),
		}
		if t.Status == meta.MoveRunning {
			e.TaskHandle = taskHandle(t, src.Name)
		}
		if !t.Destination.IsZero() {
			if dq, err := d.cfg.Backend.QueueByID(ctx, t.Destination); err == nil {
				e.DestinationArn = c.queueARN(dq.Name)
			}
		}
		out.Results = append(out.Results, e)
	}
	return out, nil
}

func (d *Door) cancelMessageMoveTask(c *call) (any, error) {
	var in struct {
		TaskHandle string `json:"TaskHandle"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	if in.TaskHandle == "" {
		return nil, missingParam("TaskHandle")
	}
	id, name, ok := parseTaskHandle(in.TaskHandle)
	if !ok {
		return nil, invalidParam("TaskHandle", "not a task handle")
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	src, err := d.cfg.Backend.QueueByName(ctx, c.principal.ProjectID, name)
	var t meta.MoveTask
	if err == nil {
		t, err = d.cfg.MoveTasks.GetMoveTask(ctx, src, id)
	}
	if apierr.CodeOf(err) == apierr.NotFound {
		return nil, newErr(errResourceNotFound, "The resource that you specified for the TaskHandle parameter doesn't exist.")
	}
	if err != nil {
		return nil, err
	}
	if t.Status != meta.MoveRunning {
		return nil, newErr(errUnsupportedOp, "Only a running task can be cancelled; this one is %s.", strings.ToUpper(t.Status))
	}
	if t, err = d.cfg.MoveTasks.CancelMoveTask(ctx, t); err != nil {
		return nil, err
	}
	return struct {
		ApproximateNumberOfMessagesMoved int64 `json:"ApproximateNumberOfMessagesMoved" xml:"ApproximateNumberOfMessagesMoved"`
	}{t.Moved}, nil
}

package queuemetrics

import "github.com/prometheus/client_golang/prometheus"

// The metrics, by name (infra/grafana's dashboard is checked against this list).
var (
	descMessages = prometheus.NewDesc("queues_backlog_messages",
		"Messages of the busiest queues by state (visible, inFlight, delayed); only the top N queues by backlog have a series.",
		[]string{"project", "queue", "state"}, nil)
	descOldest = prometheus.NewDesc("queues_backlog_oldest_message_age_seconds",
		"Age of the oldest message of each of the busiest queues (0 when empty).",
		[]string{"project", "queue"}, nil)
	descTotal = prometheus.NewDesc("queues_backlog_messages_all",
		"Messages of every queue sampled, by state.", []string{"state"}, nil)
	descQueues = prometheus.NewDesc("queues_backlog_queues",
		"Queues examined in the last round.", nil, nil)
	descTruncated = prometheus.NewDesc("queues_backlog_truncated",
		"1 when the last round stopped at its limit of queues or subscriptions.", nil, nil)
	descErrors = prometheus.NewDesc("queues_backlog_sample_errors",
		"Queues and subscriptions whose counts or attempts could not be read in the last round.", nil, nil)
	descDuration = prometheus.NewDesc("queues_backlog_sample_duration_seconds",
		"How long the last round took.", nil, nil)
	descAt = prometheus.NewDesc("queues_backlog_sample_timestamp_seconds",
		"When the last round started (Unix time).", nil, nil)
	descSubs = prometheus.NewDesc("queues_push_subscriptions",
		"Push subscriptions by state: active, paused, failing (active and its latest attempt failed or was throttled).",
		[]string{"state"}, nil)
	descSubFailing = prometheus.NewDesc("queues_push_subscription_failing",
		"1 when the subscription's latest attempt failed or was throttled (subscriptions of the busiest queues).",
		[]string{"project", "queue"}, nil)
	descSubRatio = prometheus.NewDesc("queues_push_subscription_failure_ratio",
		"Share of the subscription's recent attempts (up to 20) that failed or were throttled.",
		[]string{"project", "queue"}, nil)
	descSubSince = prometheus.NewDesc("queues_push_subscription_seconds_since_success",
		"Seconds since the subscription's latest successful attempt; absent when it has none recorded.",
		[]string{"project", "queue"}, nil)
	descSubPaused = prometheus.NewDesc("queues_push_subscription_paused",
		"1 when the subscription is paused.", []string{"project", "queue"}, nil)
	descParked = prometheus.NewDesc("queues_fifo_parked_groups",
		"Fifo groups a poison policy holds parked (onDeadLetter park or parkGroup), per queue that has any.",
		[]string{"project", "queue"}, nil)
)

// MetricNames lists every metric the Sampler exports.
var MetricNames = []string{
	"queues_backlog_messages", "queues_backlog_oldest_message_age_seconds", "queues_backlog_messages_all",
	"queues_backlog_queues", "queues_backlog_truncated", "queues_backlog_sample_errors",
	"queues_backlog_sample_duration_seconds", "queues_backlog_sample_timestamp_seconds",
	"queues_push_subscriptions", "queues_push_subscription_failing", "queues_push_subscription_failure_ratio",
	"queues_push_subscription_seconds_since_success", "queues_push_subscription_paused",
	"queues_fifo_parked_groups",
}

// Describe implements prometheus.Collector.
func (s *Sampler) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessages, descOldest, descTotal, descQueues, descTruncated, descErrors,
		descDuration, descAt, descSubs, descSubFailing, descSubRatio, descSubSince, descSubPaused, descParked} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last round, nothing before the first.
func (s *Sampler) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	snap := s.last
	s.mu.Unlock()
	if snap == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, q := range snap.top {
		gauge(descMessages, float64(q.counts.Visible), q.project, q.queue, "visible")
		gauge(descMessages, float64(q.counts.InFlight), q.project, q.queue, "inFlight")
		gauge(descMessages, float64(q.counts.Delayed), q.project, q.queue, "delayed")
		gauge(descOldest, q.oldestAge, q.project, q.queue)
	}
	for _, q := range snap.parked {
		gauge(descParked, float64(q.parked), q.project, q.queue)
	}
	gauge(descTotal, float64(snap.totals.Visible), "visible")
	gauge(descTotal, float64(snap.totals.InFlight), "inFlight")
	gauge(descTotal, float64(snap.totals.Delayed), "delayed")
	gauge(descQueues, float64(snap.queues))
	gauge(descTruncated, boolValue(snap.truncated))
	gauge(descErrors, float64(snap.errors))
	gauge(descDuration, snap.duration.Seconds())
	gauge(descAt, float64(snap.at.UnixMilli())/1000)
	gauge(descSubs, float64(snap.subsActive), "active")
	gauge(descSubs, float64(snap.subsOff), "paused")
	gauge(descSubs, float64(snap.subsFailing), "failing")
	for _, h := range snap.subs {
		gauge(descSubFailing, boolValue(h.failing), h.project, h.queue)
		gauge(descSubRatio, h.failureRatio, h.project, h.queue)
		gauge(descSubPaused, boolValue(h.paused), h.project, h.queue)
		if h.sinceSuccess >= 0 {
			gauge(descSubSince, h.sinceSuccess, h.project, h.queue)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

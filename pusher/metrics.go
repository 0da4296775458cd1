package pusher

import "github.com/prometheus/client_golang/prometheus"

// metrics are the fleet's Prometheus metrics. None has a per-queue or per-subscription label:
// tenants' numbers are in the attempts log.
type metrics struct {
	messages *prometheus.CounterVec // by outcome
	latency  prometheus.Histogram   // attempt latency
	errors   *prometheus.CounterVec // endpoint errors by class
	batches  *prometheus.CounterVec // batches by result
	leases   prometheus.Gauge       // subscriptions this replica holds
	// Endpoint health (issue 37).
	disabled    prometheus.Counter // subscriptions this replica disabled
	disabledNow prometheus.Gauge   // held subscriptions that are disabled
	failingNow  prometheus.Gauge   // held subscriptions whose last attempt failed
}

// Message outcomes counted by queues_push_messages_total.
const (
	mPushed       = "pushed"
	mAcknowledged = "acknowledged"
	mRetried      = "retried"
	mDeadLettered = "dead_lettered"
	mDeferred     = "deferred"
	mCancelled    = "cancelled"
	mThrottled    = "throttled" // returned uncounted after the endpoint's Retry-After
	mReleased     = "released"  // received but given back before sending (too little time left, paused, lease lost)
)

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_push_messages_total",
			Help: "Messages by push outcome: pushed, acknowledged, retried, dead_lettered, deferred, released, cancelled, throttled.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "queues_push_attempt_duration_seconds",
			Help:    "Time from sending a push request to its response (or failure).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_push_endpoint_errors_total",
			Help: "Failed push attempts by class: http_status, invalid_response, timeout, connection_error, tls_error, blocked_address.",
		}, []string{"class"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_push_batches_total",
			Help: "Push attempts by result: acknowledged, deferred, settled, throttled, failed.",
		}, []string{"result"}),
		leases: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queues_push_subscriptions_held",
			Help: "Subscriptions whose lease this replica holds.",
		}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queues_push_subscriptions_disabled_total",
			Help: "Subscriptions disabled because every push attempt failed for their disableAfterSeconds.",
		}),
		disabledNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queues_push_subscriptions_disabled",
			Help: "Subscriptions held by this replica that are disabled (sum over the fleet: all of them).",
		}),
		failingNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queues_push_subscriptions_failing",
			Help: "Subscriptions held by this replica whose last push attempt failed.",
		}),
	}
	for _, o := range []string{mPushed, mAcknowledged, mRetried, mDeadLettered, mDeferred, mReleased, mCancelled, mThrottled} {
		m.messages.WithLabelValues(o)
	}
	for _, c := range []string{ErrHTTPStatus, ErrInvalidResponse, ErrTimeout, ErrConnection, ErrTLS, ErrBlocked} {
		m.errors.WithLabelValues(c)
	}
	r.MustRegister(m.messages, m.latency, m.errors, m.batches, m.leases, m.disabled, m.disabledNow, m.failingNow)
	return m
}

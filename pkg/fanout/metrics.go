package fanout

import "github.com/prometheus/client_golang/prometheus"

// metrics carry no label per topic, queue or project: their number is unbounded.
type metrics struct {
	copies     prometheus.Counter
	refused    prometheus.Counter
	orphans    prometheus.Counter
	leasesLost prometheus.Counter
	errors     *prometheus.CounterVec
	held       prometheus.Gauge
	delay      prometheus.Histogram
}

// newMetrics makes the runner's metrics; lag reports the largest lag among the held topics.
func newMetrics(reg prometheus.Registerer, lag func() float64) *metrics {
	m := &metrics{
		copies: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queues_fanout_copies_total", Help: "Topic log entries copied into bound queues.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queues_fanout_refused_total", Help: "Copies a bound queue refused (its byte quota, a fifo dedup id); recorded on the binding as failed.",
		}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queues_fanout_orphans_unbound_total", Help: "Engine bindings unbound because their queue or their metadata was gone.",
		}),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queues_fanout_leases_lost_total", Help: "Topic leases another replica took while this one held them.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_fanout_errors_total", Help: "Fan-out storage failures by operation (active, lease, bindings, read, copy, advance, trim, idle, queue, limits, orphans, unbind, filter).",
		}, []string{"op"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queues_fanout_topics_held", Help: "Topics whose fan-out lease this replica holds.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "queues_fanout_copy_delay_seconds", Help: "From a log entry's publish to its copy into a bound queue.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	lagGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "queues_fanout_lag_seconds",
		Help: "Among the topics this replica holds, the largest age of a log entry some binding has not handled yet (0: all caught up).",
	}, lag)
	if reg != nil {
		reg.MustRegister(m.copies, m.refused, m.orphans, m.leasesLost, m.errors, m.held, m.delay, lagGauge)
	}
	return m
}

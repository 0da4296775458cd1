package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics carries no label per queue or project: their number is unbounded.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	messages *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_http_requests_total", Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queues_http_request_duration_seconds", Help: "HTTP request latency by method and route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25},
		}, []string{"method", "route"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_messages_total", Help: "Messages by operation: sent, duplicate, received, acked, released, dead_lettered, published (appended to topics' logs).",
		}, []string{"op"}),
	}
	r.MustRegister(m.requests, m.latency, m.messages)
	return m
}

// knownMethods are the request methods the metrics name; any other method token is "other".
// echo runs the metrics middleware on 404 and 405 answers too, so labelling the raw token
// would let any caller mint a permanent series per invented method.
var knownMethods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodHead: http.MethodHead, http.MethodPost: http.MethodPost,
	http.MethodPut: http.MethodPut, http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
	http.MethodOptions: http.MethodOptions, http.MethodConnect: http.MethodConnect, http.MethodTrace: http.MethodTrace,
}

// methodLabel is the bounded metrics label of a request method.
func methodLabel(m string) string {
	if l, ok := knownMethods[m]; ok {
		return l
	}
	return "other"
}

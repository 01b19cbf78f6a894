package http

import (
	"context"
	"strconv"
	"time"

	"github.com/laurel/laurel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	commitOps       prometheus.Histogram
	commitSeconds   prometheus.Histogram
	eventsApplied   prometheus.Counter
	eventsDuplicate prometheus.Counter
	streams         prometheus.Gauge
	streamsDropped  prometheus.Counter
	hookAttempts    *prometheus.CounterVec
	guardRefused    *prometheus.CounterVec
	held            *prometheus.CounterVec
	flagsResolved   *prometheus.CounterVec
}

func newMetrics(svc laurel.Service) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laurel_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "laurel_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and status.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "status"}),
		commitOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "laurel_store_commit_ops",
			Help:    "Operations made durable by one group commit (one fsync).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "laurel_store_commit_duration_seconds",
			Help:    "Duration of one group commit, fsync included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		eventsApplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "laurel_events_applied_total",
			Help: "Events applied.",
		}),
		eventsDuplicate: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "laurel_events_duplicate_total",
			Help: "Events answered as duplicates of an event id already counted.",
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "laurel_streams",
			Help: "Live streams open.",
		}),
		streamsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "laurel_streams_dropped_total",
			Help: "Live streams dropped because their client could not keep up.",
		}),
		hookAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laurel_webhook_attempts_total",
			Help: "Webhook delivery attempts by this node, by the delivery's state after them: delivered, pending (to retry) or failed (no attempt left).",
		}, []string{"state"}),
		guardRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laurel_guard_refused_total",
			Help: "Submits refused by a rule of a board's guard (trusted, rate, gain, jump), by board and rule.",
		}, []string{"board", "rule"}),
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laurel_guard_held_total",
			Help: "Events held for review by a hold rule of a board's guard (rate, gain, jump), and members the game reported (reported), by board and rule.",
		}, []string{"board", "rule"}),
		flagsResolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laurel_flags_resolved_total",
			Help: "Flags resolved by a person, by board, the rule that opened them (or reported) and resolution (cleared, confirmed).",
		}, []string{"board", "rule", "resolution"}),
	}
	// Each state's series is there from the start, at 0, so that an alert on failed
	// attempts has a series to watch before the first attempt.
	for _, state := range []string{laurel.DeliveryDelivered, laurel.DeliveryPending, laurel.DeliveryFailed} {
		m.hookAttempts.WithLabelValues(state)
	}
	m.reg.MustRegister(m.requests, m.latency, m.commitOps, m.commitSeconds, m.eventsApplied, m.eventsDuplicate,
		m.streams, m.streamsDropped, m.hookAttempts, m.guardRefused, m.held, m.flagsResolved,
		&entriesCollector{svc: svc},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// flagRule is the rule label of a flag: its rule, or reported for the game's.
func flagRule(f *laurel.Flag) string {
	if f.Rule == "" {
		return "reported"
	}
	return f.Rule
}

func (m *metrics) flagOpened(f *laurel.Flag) { m.held.WithLabelValues(f.Board, flagRule(f)).Inc() }

func (m *metrics) flagResolved(f *laurel.Flag) {
	m.flagsResolved.WithLabelValues(f.Board, flagRule(f), f.State).Inc()
}

func (m *metrics) observeRequest(route string, status int, took time.Duration) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, code).Inc()
	m.latency.WithLabelValues(route, code).Observe(took.Seconds())
}

// entriesCollector reports, at scrape time, the entries of each board: the total of its first
// window's current period.
type entriesCollector struct {
	svc laurel.Service
}

var entriesDesc = prometheus.NewDesc("laurel_board_entries",
	"Members present in the current period of each board's first window.", []string{"board"}, nil)

func (c *entriesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- entriesDesc }

func (c *entriesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	boards, err := c.svc.Boards(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(entriesDesc, err)
		return
	}
	for _, b := range boards {
		if len(b.Windows) == 0 {
			continue
		}
		p := b.Current[b.Windows[0].String()]
		ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(p.Total), b.ID)
	}
}

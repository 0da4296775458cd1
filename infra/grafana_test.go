package infra

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/queuemetrics"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pusher"
	"github.com/queueshq/queues/services/queues/embedded"
)

// recorder is a prometheus.Registerer that keeps the name of every metric described to it.
type recorder struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recorder) Unregister(prometheus.Collector) bool { return true }

// registered builds each process's metrics as the code does and lists their names: the API's,
// the pusher's, the backlog sampler's, and the Go and process collectors.
func registered(t *testing.T) map[string]bool {
	r := &recorder{names: map[string]bool{}}
	api.New(api.Config{Registry: r})
	n, err := embedded.Open(context.Background(), embedded.Options{DataDir: t.TempDir(), SweepEvery: -1, BacklogTopN: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Push: embedded.PushOptions{Grace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ring, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pusher.New(pusher.Config{Engine: n.Engine, Store: n.Store, Receipts: receipt.NewSigner(ring),
		Coordinator: pusher.NewSolo(), Attempts: n.Attempts, Health: memmeta.NewHealth(), Registry: r}); err != nil {
		t.Fatal(err)
	}
	r.MustRegister(queuemetrics.New(queuemetrics.Config{Meta: n.Store, Engine: n.Engine}),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r.names
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var metricRef = regexp.MustCompile(`\b(?:queues|go|process)_[a-z0-9_]+\b`)

// TestGrafanaDashboard parses infra/grafana/queues.json and checks that every metric its
// queries name is one the code registers (histograms by their _bucket/_sum/_count series).
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("grafana/queues.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("queues.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 || len(d.Panels) == 0 {
		t.Fatalf("dashboard header: %+v", d)
	}
	var datasource bool
	for _, v := range d.Templating.List {
		datasource = datasource || (v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus")
	}
	if !datasource {
		t.Error("no ${datasource} variable of type prometheus")
	}
	names := registered(t)
	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: grid %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			refs := metricRef.FindAllString(tg.Expr, -1)
			if len(refs) == 0 {
				t.Errorf("panel %q: %q names no metric", p.Title, tg.Expr)
			}
			for _, m := range refs {
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if s, ok := strings.CutSuffix(m, suffix); ok && names[s] {
						base = s
					}
				}
				if !names[base] {
					t.Errorf("panel %q uses %s, which no process registers", p.Title, m)
				}
				used[base] = true
			}
		}
	}
	// The backlog metrics are the dashboard's reason to exist: each is on it.
	for _, m := range queuemetrics.MetricNames {
		if !used[m] {
			t.Errorf("backlog metric %s is on no panel", m)
		}
	}
}

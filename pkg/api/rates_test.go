package api

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// askedLimiter records the rate each call was limited to.
type askedLimiter struct{ rates []int }

func (l *askedLimiter) Allow(_ context.Context, _ string, perSecond int) (time.Duration, error) {
	l.rates = append(l.rates, perSecond)
	return 0, nil
}

// TestZeroRatesAreDefaults: a Config without Rates limits queues to DefaultRates (as the
// stack and the embedded node did before New decided it), and a zero field of Rates given
// leaves that operation unlimited.
func TestZeroRatesAreDefaults(t *testing.T) {
	t.Parallel()
	std := meta.Queue{ID: ids.New(), Type: string(engine.Standard)}
	fifo := meta.Queue{ID: ids.New(), Type: string(engine.FIFO)}
	for _, c := range []struct {
		rates Rates
		want  []int // send and receive, standard then fifo; unlimited calls ask nothing
	}{
		{Rates{}, []int{3000, 3000, 300, 300}},
		{Rates{StandardSend: 5}, []int{5}},
	} {
		l := &askedLimiter{}
		s := New(Config{Limiter: l, Rates: c.rates})
		for _, q := range []meta.Queue{std, fifo} {
			for _, op := range []string{"send", "receive"} {
				if err := s.QueueRate(t.Context(), q, op); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !slices.Equal(l.rates, c.want) {
			t.Fatalf("Rates %+v: limited to %v, want %v", c.rates, l.rates, c.want)
		}
	}
}

package redisengine_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/engine/redisengine"
)

func TestParseSendLimit(t *testing.T) {
	for in, want := range map[string]redisengine.SendLimit{
		"":        {Fraction: 0.9},
		"90%":     {Fraction: 0.9},
		" 50 % ":  {Fraction: 0.5},
		"100%":    {Fraction: 1},
		"off":     {},
		"1000":    {Bytes: 1000},
		"800mb":   {Bytes: 800 << 20},
		"2GB":     {Bytes: 2 << 30},
		"512MiB":  {Bytes: 512 << 20},
		"64k":     {Bytes: 64 << 10},
		"64kb":    {Bytes: 64 << 10},
		"1000000": {Bytes: 1_000_000},
	} {
		got, err := redisengine.ParseSendLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseSendLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"0%", "101%", "-5", "0", "x", "12tb", "%", "mb", "1.5gb", "9223372036854775807g"} {
		if got, err := redisengine.ParseSendLimit(in); err == nil {
			t.Errorf("ParseSendLimit(%q) = %+v, want an error", in, got)
		}
	}
}

func FuzzParseSendLimit(f *testing.F) {
	for _, s := range []string{"90%", "800mb", "off", "1", "100%", "2GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := redisengine.ParseSendLimit(s)
		if err != nil {
			return
		}
		if l.Bytes < 0 || l.Fraction < 0 || l.Fraction > 1 || (l.Bytes > 0 && l.Fraction > 0) {
			t.Fatalf("ParseSendLimit(%q) = %+v", s, l)
		}
	})
}

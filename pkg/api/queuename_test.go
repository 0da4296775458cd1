package api

import (
	"regexp"
	"strings"
	"testing"
)

// TestLooksLikeQueueName checks the hand-written matcher against the shape as a regexp, on
// names at and past both lengths, with and without ".fifo", and with every kind of byte.
func TestLooksLikeQueueName(t *testing.T) {
	shape := regexp.MustCompile(`^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$`)
	var cases []string
	for _, n := range []int{0, 1, 74, 75, 76, 79, 80, 81} {
		name := strings.Repeat("a", n)
		cases = append(cases, name, name+".fifo", name+".FIFO", name+"fifo", name+".fifo.fifo")
	}
	for c := 0; c < 256; c++ {
		cases = append(cases, "q"+string(rune(c)), string([]byte{byte(c)})+"q", "q"+string([]byte{byte(c)})+".fifo")
	}
	cases = append(cases, ".fifo", "a.fifox", "Orders_2-x.fifo")
	for _, s := range cases {
		if got, want := looksLikeQueueName(s), shape.MatchString(s); got != want {
			t.Errorf("looksLikeQueueName(%q) = %v, want %v", s, got, want)
		}
	}
}

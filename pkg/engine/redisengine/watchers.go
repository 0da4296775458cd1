package redisengine

// Watchers returns how many watches (waiting receives) this engine holds, for metrics and for
// tests that must know a receive is parked.
func (e *Engine) Watchers() int {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	n := 0
	for _, set := range e.watchers {
		n += len(set)
	}
	return n
}

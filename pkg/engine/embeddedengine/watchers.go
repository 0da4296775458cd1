package embeddedengine

// Watchers returns how many watches (waiting receives) this engine holds, for metrics and for
// tests that must know a receive is parked.
func (e *Engine) Watchers() int { return e.watch.Count() }

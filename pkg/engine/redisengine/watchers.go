package redisengine

// Watchers returns how many watches (waiting receives) this engine holds, for metrics and for
// tests that must know a receive is parked.
func (e *Engine) Watchers() int { return e.watch.Count() }

// ScanBytes is how many bytes of stored messages this engine's filtered receives have read to
// match candidates (filter.MaxScanBytes bounds each call), for tests that bound that work.
func (e *Engine) ScanBytes() int64 { return e.scanBytes.Load() }

// FilteredSignals is how many times wake-ups signalled a receive parked with a filter here,
// for tests that bound what a send storm wakes.
func (e *Engine) FilteredSignals() uint64 { return e.watch.FilteredSignals() }

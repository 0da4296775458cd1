package engine

// TraceparentAttribute is the reserved attribute under which a message's W3C traceparent is
// stored (the API's "traceparent" message field). Its "#" is outside the attribute-name
// alphabet of the /v1 API ([A-Za-z0-9_.-]) and of SQS, so no client can set or clash with it.
// The API adds it to a message's attributes on send and takes it out again on every read
// (SplitTraceparent); it does not count toward MaxAttributes, MaxMessageBytes or stored
// bytes (PayloadBytes), so a producer's tracing never changes what it is billed or refused.
const TraceparentAttribute = "#traceparent"

// WithTraceparent is attrs with tp stored under TraceparentAttribute (attrs itself when tp is
// empty). attrs is not modified.
func WithTraceparent(attrs map[string]string, tp string) map[string]string {
	if tp == "" {
		return attrs
	}
	out := make(map[string]string, len(attrs)+1)
	for k, v := range attrs {
		out[k] = v
	}
	out[TraceparentAttribute] = tp
	return out
}

// SplitTraceparent separates a stored message's traceparent from its client attributes. It
// allocates only when the message has one.
func SplitTraceparent(attrs map[string]string) (clean map[string]string, tp string) {
	tp, ok := attrs[TraceparentAttribute]
	if !ok {
		return attrs, ""
	}
	return without(attrs, TraceparentAttribute), tp
}

// without is a copy of attrs without the attribute name (which attrs holds).
func without(attrs map[string]string, name string) map[string]string {
	clean := make(map[string]string, len(attrs)-1)
	for k, v := range attrs {
		if k != name {
			clean[k] = v
		}
	}
	return clean
}

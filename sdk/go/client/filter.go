package client

import (
	"encoding/json"
	"net/url"
	"sort"
)

// Filter selects messages by their attributes
// (docs/delivery-options.md#filtered-receive-and-browse) for Receive, Browse, Stream and Consume:
// every named attribute must be present with one of its values. A receive with a filter examines at
// most 1,000 messages in delivery order and takes the matching ones; the others stay as they are
// for other receives. Nil (or no attributes) selects every message.
type Filter struct {
	// Attributes maps an attribute name to the values it may have (at least one each).
	Attributes map[string][]string `json:"attributes"`
}

// Attr is a filter of one attribute with any of the values given; chain And for more.
func Attr(name string, values ...string) *Filter {
	return (&Filter{}).And(name, values...)
}

// And adds an attribute to the filter (values any of which matches) and returns it.
func (f *Filter) And(name string, values ...string) *Filter {
	if f.Attributes == nil {
		f.Attributes = map[string][]string{}
	}
	f.Attributes[name] = append(f.Attributes[name], values...)
	return f
}

func (f *Filter) empty() bool { return f == nil || len(f.Attributes) == 0 }

// addQuery adds the filter's query form to q (browse, the stream): attribute.<name>=<value>,
// once per value.
func (f *Filter) addQuery(q url.Values) {
	if f.empty() {
		return
	}
	names := make([]string, 0, len(f.Attributes))
	for n := range f.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, v := range f.Attributes[n] {
			q.Add("attribute."+n, v)
		}
	}
}

// filterField is the receive body's filter member (`,"filter":{…}`), "" without a filter.
func (co *consumer) filterField() string {
	if co.o.Filter.empty() {
		return ""
	}
	raw, err := json.Marshal(co.o.Filter)
	if err != nil {
		return "" // a map of strings always marshals
	}
	return `,"filter":` + string(raw)
}

// consumerField is the receive body's consumerId member (`,"consumerId":"…"`), "" without one.
func (co *consumer) consumerField() string {
	if co.o.ConsumerID == "" {
		return ""
	}
	raw, _ := json.Marshal(co.o.ConsumerID) // a string always marshals
	return `,"consumerId":` + string(raw)
}

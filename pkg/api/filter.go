package api

import (
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/filter"
)

// Filtered receive and browse (docs/delivery-options.md#filtered-receive-and-browse). A receive's
// body takes the filter object as "filter"; browse and the receive stream are GETs, whose query
// takes it as attribute.<name>=<value>, repeated: every name must match, and a name given twice
// lists values any of which matches (attribute.color=red&attribute.color=blue). Errors name the
// query parameter, and for one bad value its occurrence: attribute.color[1].

// filterQueryPrefix begins every filter parameter of a query.
const filterQueryPrefix = "attribute."

// filterOfBody reads a receive body's "filter" (nil when absent or null).
func filterOfBody(o *object) (*filter.Filter, error) {
	if !o.has("filter") || o.isNull("filter") {
		return nil, nil
	}
	f, err := filter.Parse(o.fields["filter"])
	if err != nil {
		return nil, err.WithPrefix(o.path("filter"))
	}
	if f.Empty() {
		return nil, nil
	}
	return f, nil
}

// filterOfQuery reads the attribute.<name> parameters of a query (nil when there are none).
func filterOfQuery(q url.Values) (*filter.Filter, error) {
	var names []string
	for k := range q {
		if strings.HasPrefix(k, filterQueryPrefix) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names) // the first bad parameter in a stable order
	if len(names) > filter.MaxAttributes {
		return nil, apierr.Invalid(names[filter.MaxAttributes], "a filter may name at most %d attributes, this one names %d",
			filter.MaxAttributes, len(names))
	}
	f := &filter.Filter{Attributes: make(map[string][]string, len(names))}
	for _, k := range names {
		values := q[k]
		if len(values) > filter.MaxValues {
			return nil, apierr.Invalid(k, "may be given at most %d times, is given %d", filter.MaxValues, len(values))
		}
		one := &filter.Filter{Attributes: map[string][]string{strings.TrimPrefix(k, filterQueryPrefix): values}}
		if err := one.Validate(); err != nil {
			return nil, queryField(err, k)
		}
		f.Attributes[strings.TrimPrefix(k, filterQueryPrefix)] = values
	}
	return f, nil
}

// queryField renames a filter error's field (relative to the filter object: "attributes",
// "attributes.<name>" or "attributes.<name>[i]") to the query parameter k it came from.
func queryField(err *apierr.Error, k string) *apierr.Error {
	c := *err
	if i := strings.LastIndexByte(c.Field, '['); i >= 0 && strings.HasSuffix(c.Field, "]") {
		if _, aerr := strconv.Atoi(c.Field[i+1 : len(c.Field)-1]); aerr == nil {
			c.Field = k + c.Field[i:]
			return &c
		}
	}
	c.Field = k
	return &c
}

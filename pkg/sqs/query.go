package sqs

import (
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The query protocol flattens the JSON protocol's input into form fields: lists as
// Name.1, Name.2 (1-based), maps as Name.N.Name / Name.N.Value (Key/Value for tags), nested
// members as dotted paths. queryToJSON rebuilds the JSON protocol's input document from
// them, so both protocols share one decoder per action.

// queryNode is one dotted path segment of the form.
type queryNode struct {
	value string
	set   bool
	kids  map[string]*queryNode
}

// Query member names that differ from the JSON protocol's: the flattened name of a list or
// map and the JSON member it becomes.
var queryRenames = map[string]string{
	"Attribute":                      "Attributes",
	"AttributeName":                  "AttributeNames",
	"MessageAttributeName":           "MessageAttributeNames",
	"MessageSystemAttributeName":     "MessageSystemAttributeNames",
	"Tag":                            "Tags",
	"TagKey":                         "TagKeys",
	"MessageAttribute":               "MessageAttributes",
	"MessageSystemAttribute":         "MessageSystemAttributes",
	"SendMessageBatchRequestEntry":   "Entries",
	"DeleteMessageBatchRequestEntry": "Entries",
	"ChangeMessageVisibilityBatchRequestEntry": "Entries",
	"QueueUrl": "QueueUrl",
	// AddPermission's lists.
	"AWSAccountId": "AWSAccountIds",
	"ActionName":   "Actions",
}

// queryMaps are the JSON members that are maps, with the key and value member names of their
// flattened entries.
var queryMaps = map[string][2]string{
	"Attributes":              {"Name", "Value"},
	"Tags":                    {"Key", "Value"},
	"MessageAttributes":       {"Name", "Value"},
	"MessageSystemAttributes": {"Name", "Value"},
}

// queryLists are the JSON members that are lists. A list or map member sent with no index and
// an empty value (botocore and aws-sdk-go send an empty list as AttributeName=) is empty.
var queryLists = map[string]bool{
	"AttributeNames": true, "MessageAttributeNames": true, "MessageSystemAttributeNames": true,
	"TagKeys": true, "Entries": true,
}

// maxQueryFields bounds the fields of one query request (10 entries of 10 attributes of a few
// fields each fit well within it).
const maxQueryFields = 2000

// queryToJSON turns form values (without Action, Version and the signature's fields) into the
// JSON protocol's input document.
func queryToJSON(form url.Values) ([]byte, *Error) {
	if len(form) > maxQueryFields {
		return nil, newErr(errMalformedQuery, "too many parameters")
	}
	root := &queryNode{}
	for k, vs := range form {
		if len(vs) == 0 {
			continue
		}
		n := root
		for seg := range strings.SplitSeq(k, ".") {
			if seg == "" {
				return nil, newErr(errMalformedQuery, "malformed parameter name %q", k)
			}
			if n.kids == nil {
				n.kids = map[string]*queryNode{}
			}
			c := n.kids[seg]
			if c == nil {
				c = &queryNode{}
				n.kids[seg] = c
			}
			n = c
		}
		n.value, n.set = vs[0], true
	}
	doc, err := root.object()
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(doc)
	return b, nil
}

// object converts a node's children to JSON members, renaming flattened lists and maps.
func (n *queryNode) object() (map[string]any, *Error) {
	out := map[string]any{}
	for name, c := range n.kids {
		key := name
		if r, ok := queryRenames[name]; ok {
			key = r
		}
		v, err := c.value2(key)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

func (n *queryNode) value2(member string) (any, *Error) {
	if n.kids == nil {
		_, isMap := queryMaps[member]
		switch {
		case n.value == "" && queryLists[member]:
			return []any{}, nil
		case n.value == "" && isMap:
			return map[string]any{}, nil
		}
		return n.value, nil
	}
	items, isList := n.list()
	if !isList {
		return n.object()
	}
	if kv, isMap := queryMaps[member]; isMap {
		m := map[string]any{}
		for _, it := range items {
			k, v := it.kids[kv[0]], it.kids[kv[1]]
			if k == nil || !k.set {
				return nil, newErr(errMalformedQuery, "a %s entry has no %s", member, kv[0])
			}
			if v == nil {
				m[k.value] = ""
				continue
			}
			val, err := v.value2("")
			if err != nil {
				return nil, err
			}
			m[k.value] = val
		}
		return m, nil
	}
	out := make([]any, len(items))
	for i, it := range items {
		v, err := it.value2("")
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// list reports whether every child is a positive index, and the children in index order.
func (n *queryNode) list() ([]*queryNode, bool) {
	type item struct {
		i int
		n *queryNode
	}
	items := make([]item, 0, len(n.kids))
	for k, c := range n.kids {
		i, err := strconv.Atoi(k)
		if err != nil || i < 1 || strconv.Itoa(i) != k {
			return nil, false
		}
		items = append(items, item{i, c})
	}
	sort.Slice(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]*queryNode, len(items))
	for i, it := range items {
		out[i] = it.n
	}
	return out, true
}

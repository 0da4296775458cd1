package sqs

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// optInt is an integer parameter: a JSON number, or a string of digits (the query protocol).
type optInt struct {
	V   int64
	Set bool
}

// UnmarshalJSON reads a number or a quoted one. What is neither fails as a type error that
// carries the value as sent, so that inputInto can name the value and its parameter.
func (n *optInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return &json.UnmarshalTypeError{Value: s, Type: reflect.TypeFor[int64]()}
	}
	n.V, n.Set = v, true
	return nil
}

// within checks an optional integer's range; def applies when it is absent.
func (n optInt) within(name string, lo, hi, def int64) (int64, *Error) {
	if !n.Set {
		return def, nil
	}
	if n.V < lo || n.V > hi {
		return 0, invalidValue(name, n.V, "%s", rangeReason(name, lo, hi))
	}
	return n.V, nil
}

// rangeReason is AWS's reason for an integer parameter out of its range, as AWS words it for
// each (MaxNumberOfMessages and WaitTimeSeconds recorded against AWS in localstack's
// snapshots, DelaySeconds in tests run against AWS).
func rangeReason(name string, lo, hi int64) string {
	switch name {
	case "MaxNumberOfMessages":
		return fmt.Sprintf("Must be between %d and %d, if provided.", lo, hi)
	case "DelaySeconds":
		return fmt.Sprintf("DelaySeconds must be >= %d and <= %d.", lo, hi)
	}
	return fmt.Sprintf("Must be >= %d and <= %d, if provided.", lo, hi)
}

// inputInto decodes the call's input document into v. A value of the wrong type fails with
// an SQS error naming the parameter (never the decoder's own text): SerializationException on
// the JSON protocol, InvalidParameterValue on the query protocol.
func (c *call) inputInto(v any) *Error {
	err := json.Unmarshal(c.input, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	if errors.As(err, &b64) {
		// The decoder does not say which member held it; only BinaryValue members are binary.
		if c.proto == protoJSON {
			return newErr(errSerialization, "The value of BinaryValue must be base64-encoded binary.")
		}
		return newErr(errInvalidParameter, "Value for parameter BinaryValue is invalid. Reason: Must be base64-encoded binary.")
	}
	if !errors.As(err, &te) || te.Field == "" {
		if c.proto == protoJSON {
			return newErr(errSerialization, "The request body is not a valid JSON 1.0 document of the action's input.")
		}
		return newErr(errMalformedQuery, "The request's parameters could not be read.")
	}
	// The decoder names an embedded struct by its Go type (lower case here); SQS members are
	// all capitalized.
	var path []string
	for seg := range strings.SplitSeq(te.Field, ".") {
		if seg != "" && (seg[0] < 'a' || seg[0] > 'z') {
			path = append(path, seg)
		}
	}
	te.Field = strings.Join(path, ".")
	want := kindName(te.Type)
	if c.proto == protoJSON {
		return newErr(errSerialization, "The value of %s must be %s.", te.Field, want)
	}
	name := c.queryParamName(te.Field)
	if te.Type != nil && te.Type.Kind() == reflect.Int64 {
		return newErr(errInvalidParameter, "Value %s for parameter %s is invalid. Reason: Must be %s.", te.Value, name, want)
	}
	return newErr(errInvalidParameter, "Value for parameter %s is invalid. Reason: Must be %s.", name, want)
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "a value of another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "base64-encoded binary"
		}
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return "a structure"
}

// queryParamName writes a decoded member's path (Entries.DelaySeconds) in the query
// protocol's names (SendMessageBatchRequestEntry.N.DelaySeconds).
func (c *call) queryParamName(path string) string {
	segs := strings.Split(path, ".")
	for i, s := range segs {
		for q, j := range queryRenames {
			if j != s || q == s {
				continue
			}
			if s == "Entries" {
				q = c.action + "RequestEntry"
			}
			segs[i] = q
			if queryLists[s] || queryMaps[s] != [2]string{} {
				segs[i] += ".N"
			}
			break
		}
	}
	return strings.Join(segs, ".")
}

package sqs

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/queueshq/queues/pkg/engine"
)

// How SQS message attributes are stored. A message has string attributes only (docs/api-tour.md),
// so that the /v1 API shows every SQS attribute as a string attribute of the same name:
//
//   - a String, Number or custom String.x / Number.x attribute keeps its value as it is;
//   - a Binary (or Binary.x) attribute keeps its value in standard base64;
//   - reserved attribute AWS.SQS.types, present only when some attribute is not of type
//     "String", holds a JSON object of name → SQS data type for those attributes;
//   - AWS.SQS.dedupId holds a fifo message's MessageDeduplicationId (the explicit one, or
//     the body's SHA-256 with content-based deduplication) and AWS.SQS.AWSTraceHeader the
//     AWSTraceHeader system attribute.
//
// Names starting with "AWS." are reserved on SQS, so no SQS client can send one of these.
// A /v1 message has no AWS.SQS.types: the SQS door returns its attributes as Strings.
const (
	reservedPrefix = "AWS.SQS."
	typesAttr      = reservedPrefix + "types"
	dedupAttr      = reservedPrefix + "dedupId"
	traceAttr      = reservedPrefix + "AWSTraceHeader"
)

// Limits (SQS's). A queue's MaximumMessageSize is its maxMessageBytes (1,024 to
// engine.MaxMessageBytes); a batch's messages together hold at most maxBatchBytes, as SQS's
// do since it raised both to 1 MiB.
const (
	maxMessageAttributes = 10
	maxBatchBytes        = engine.MaxMessageBytes
)

var (
	attrNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
	dataTypePattern = regexp.MustCompile(`^(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,256})?$`)
	numberPattern   = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
)

// validAttrName applies SQS's rules on message attribute names.
func validAttrName(n string) bool {
	l := strings.ToLower(n)
	return attrNamePattern.MatchString(n) && !strings.HasPrefix(n, ".") && !strings.HasSuffix(n, ".") &&
		!strings.Contains(n, "..") && !strings.HasPrefix(l, "aws.") && !strings.HasPrefix(l, "amazon.")
}

// checkAttributes validates message attributes; field names the parameter for errors. It
// answers their size as SQS counts it (name, type and value bytes).
func checkAttributes(attrs map[string]attrValue, field string) (int, *Error) {
	if len(attrs) > maxMessageAttributes {
		return 0, invalidParam(field, "Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), maxMessageAttributes)
	}
	size := 0
	for name, v := range attrs {
		if !validAttrName(name) {
			return 0, invalidParam(field, "Message attribute name '%s' is invalid.", name)
		}
		if v.DataType == "" {
			return 0, invalidParam(field, "The message attribute '%s' must contain non-empty message attribute type.", name)
		}
		if !dataTypePattern.MatchString(v.DataType) {
			return 0, invalidParam(field, "The type of message attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
		}
		if isBinary(v.DataType) {
			if v.BinaryValue == nil || v.StringValue != nil {
				return 0, invalidParam(field, "The message attribute '%s' with type 'Binary' must use field 'Binary'.", name)
			}
			size += len(name) + len(v.DataType) + len(v.BinaryValue)
			continue
		}
		if v.StringValue == nil || v.BinaryValue != nil {
			return 0, invalidParam(field, "The message attribute '%s' with type '%s' must use field 'String'.", name, baseType(v.DataType))
		}
		if *v.StringValue == "" {
			return 0, newErr(errInvalidParameter, "Message (user) attribute '%s' must contain a non-empty value of type '%s'.", name, baseType(v.DataType))
		}
		if !validContents(*v.StringValue) {
			return 0, newErr(errInvalidContents, "The message attribute '%s' contains characters outside the allowed set.", name)
		}
		if baseType(v.DataType) == "Number" && !numberPattern.MatchString(*v.StringValue) {
			return 0, invalidParam(field, "Can't cast the value of message (user) attribute '%s' to a number.", name)
		}
		size += len(name) + len(v.DataType) + len(*v.StringValue)
	}
	return size, nil
}

func baseType(t string) string { b, _, _ := strings.Cut(t, "."); return b }
func isBinary(t string) bool   { return baseType(t) == "Binary" }

// validContents is SQS's character set for bodies and string values: #x9 #xA #xD, #x20 to
// #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF, as valid UTF-8.
func validContents(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

// encodeAttributes stores SQS attributes as string attributes (see above).
func encodeAttributes(attrs map[string]attrValue, dedupID, trace string) map[string]string {
	if len(attrs) == 0 && dedupID == "" && trace == "" {
		return nil
	}
	out := make(map[string]string, len(attrs)+3)
	types := map[string]string{}
	for name, v := range attrs {
		if isBinary(v.DataType) {
			out[name] = base64.StdEncoding.EncodeToString(v.BinaryValue)
		} else {
			out[name] = *v.StringValue
		}
		if v.DataType != "String" {
			types[name] = v.DataType
		}
	}
	if len(types) > 0 {
		b, _ := json.Marshal(types)
		out[typesAttr] = string(b)
	}
	if dedupID != "" {
		out[dedupAttr] = dedupID
	}
	if trace != "" {
		out[traceAttr] = trace
	}
	return out
}

// decodedAttrs is a stored message's attributes as the SQS door shows them.
type decodedAttrs struct {
	user    map[string]attrValue
	dedupID string
	trace   string
}

// decodeAttributes reverses encodeAttributes. Attributes of /v1 messages are Strings; a
// value that a types entry calls binary but that is not base64 is shown as a String.
func decodeAttributes(stored map[string]string) decodedAttrs {
	var d decodedAttrs
	var types map[string]string
	if t, ok := stored[typesAttr]; ok {
		_ = json.Unmarshal([]byte(t), &types)
	}
	for name, v := range stored {
		switch {
		case name == dedupAttr:
			d.dedupID = v
			continue
		case name == traceAttr:
			d.trace = v
			continue
		case strings.HasPrefix(name, reservedPrefix), name == engine.TraceparentAttribute, name == engine.ReplayOfAttribute:
			continue
		}
		if d.user == nil {
			d.user = map[string]attrValue{}
		}
		typ := types[name]
		if typ == "" || !dataTypePattern.MatchString(typ) {
			typ = "String"
		}
		if isBinary(typ) {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil {
				d.user[name] = attrValue{DataType: typ, BinaryValue: b}
				continue
			}
			typ = "String"
		}
		val := v
		d.user[name] = attrValue{DataType: typ, StringValue: &val}
	}
	return d
}

// md5OfAttributes is SQS's MD5 of message attributes: for each attribute in name order, the
// name, the data type and the value, each preceded by its length as 4 bytes big-endian, with
// a transport byte (1 string, 2 binary) before the value. "" when there are none.
func md5OfAttributes(attrs map[string]attrValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	put := func(b []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(b)))
		h.Write(l[:])
		h.Write(b)
	}
	for _, n := range names {
		v := attrs[n]
		put([]byte(n))
		put([]byte(v.DataType))
		if isBinary(v.DataType) {
			h.Write([]byte{2})
			put(v.BinaryValue)
		} else {
			h.Write([]byte{1})
			put([]byte(deref(v.StringValue)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// selectAttributes filters a message's attributes by MessageAttributeNames as SQS does
// (verified against AWS in localstack's recorded snapshots): "All", ".*" and "*" select every
// attribute; "prefix.*" selects every name that starts with prefix, whether a dot follows it or
// not ("Hel.*" selects "Hello" and "Help.Me"); any other name selects itself.
func selectAttributes(attrs map[string]attrValue, names []string) map[string]attrValue {
	if len(attrs) == 0 || len(names) == 0 {
		return nil
	}
	out := map[string]attrValue{}
	for _, want := range names {
		switch {
		case want == "All" || want == ".*" || want == "*":
			return attrs
		case strings.HasSuffix(want, ".*"):
			p := strings.TrimSuffix(want, ".*")
			for n, v := range attrs {
				if strings.HasPrefix(n, p) {
					out[n] = v
				}
			}
		default:
			if v, ok := attrs[want]; ok {
				out[want] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

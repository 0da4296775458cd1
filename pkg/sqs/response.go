package sqs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"sort"
	"strconv"
)

// xmlNamespace is the query protocol's namespace (API version 2012-11-05).
const xmlNamespace = "http://queue.amazonaws.com/doc/2012-11-05/"

const (
	jsonContentType = "application/x-amz-json-1.0"
	xmlContentType  = "text/xml"
)

func (d *Door) writeOutput(w http.ResponseWriter, c *call, out any) {
	w.Header().Set("x-amzn-RequestId", c.requestID)
	if c.proto == protoJSON {
		b := []byte("{}")
		if out != nil {
			var err error
			if b, err = json.Marshal(out); err != nil {
				d.writeError(w, c, newErr(errInternal, "internal error"))
				return
			}
		}
		w.Header().Set("Content-Type", jsonContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	type metadata struct {
		RequestID string `xml:"RequestId"`
	}
	buf := []byte(xml.Header)
	buf = append(buf, `<`+c.action+`Response xmlns="`+xmlNamespace+`">`...)
	if out != nil {
		var b bytes.Buffer
		if err := xml.NewEncoder(&b).EncodeElement(out, xml.StartElement{Name: xml.Name{Local: c.action + "Result"}}); err != nil {
			d.writeError(w, c, newErr(errInternal, "internal error"))
			return
		}
		buf = append(buf, b.Bytes()...)
	}
	m, _ := xml.Marshal(struct {
		XMLName xml.Name `xml:"ResponseMetadata"`
		metadata
	}{metadata: metadata{RequestID: c.requestID}})
	buf = append(buf, m...)
	buf = append(buf, `</`+c.action+`Response>`...)
	w.Header().Set("Content-Type", xmlContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

func (d *Door) writeError(w http.ResponseWriter, c *call, e *Error) {
	if e.Status >= 500 {
		d.cfg.Logger.Error("sqs request failed", "action", c.action, "error", e.Name, "message", e.Message, "request_id", c.requestID)
	}
	w.Header().Set("x-amzn-RequestId", c.requestID)
	w.Header().Set("x-amzn-query-error", e.QueryCode+";"+e.fault())
	if c.proto == protoJSON {
		b, _ := json.Marshal(map[string]string{"__type": e.typeName(), "message": e.Message})
		w.Header().Set("Content-Type", jsonContentType)
		w.WriteHeader(e.Status)
		_, _ = w.Write(b)
		return
	}
	msg := e.Message
	if e.Name == errQueueDoesNotExist.name && msg == noQueueText {
		msg = noQueueQueryText // AWS words it so on the query protocol
	}
	type errXML struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
		Detail  string `xml:"Detail"`
	}
	b, _ := xml.Marshal(struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		NS        string   `xml:"xmlns,attr"`
		Error     errXML   `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}{NS: xmlNamespace, Error: errXML{Type: e.fault(), Code: e.QueryCode, Message: msg}, RequestID: c.requestID})
	w.Header().Set("Content-Type", xmlContentType)
	w.WriteHeader(e.Status)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

// attrMap is a string map written as the query protocol's flattened Name/Value entries
// (queue attributes, message system attributes).
type attrMap map[string]string

func (m attrMap) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return marshalPairs(e, start.Name.Local, "Name", "Value", m)
}

// tagMap is written as flattened Key/Value entries.
type tagMap map[string]string

func (m tagMap) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return marshalPairs(e, start.Name.Local, "Key", "Value", m)
}

func marshalPairs(e *xml.Encoder, elem, kname, vname string, m map[string]string) error {
	for _, k := range sortedKeys(m) {
		start := xml.StartElement{Name: xml.Name{Local: elem}}
		if err := e.EncodeToken(start); err != nil {
			return err
		}
		if err := e.EncodeElement(k, xml.StartElement{Name: xml.Name{Local: kname}}); err != nil {
			return err
		}
		if err := e.EncodeElement(m[k], xml.StartElement{Name: xml.Name{Local: vname}}); err != nil {
			return err
		}
		if err := e.EncodeToken(start.End()); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// attrValue is an SQS message attribute value. BinaryValue is base64 in both protocols.
type attrValue struct {
	DataType    string  `json:"DataType"`
	StringValue *string `json:"StringValue,omitempty"`
	BinaryValue []byte  `json:"BinaryValue,omitempty"`
	// The list forms are reserved by SQS (not implemented there either); accepted and ignored.
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
}

// msgAttrMap is written as flattened MessageAttribute entries of Name and Value.
type msgAttrMap map[string]attrValue

func (m msgAttrMap) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type valueXML struct {
		StringValue *string `xml:"StringValue,omitempty"`
		BinaryValue string  `xml:"BinaryValue,omitempty"`
		DataType    string  `xml:"DataType"`
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		x := valueXML{StringValue: v.StringValue, DataType: v.DataType}
		if v.BinaryValue != nil {
			x.BinaryValue = base64.StdEncoding.EncodeToString(v.BinaryValue)
		}
		if err := e.EncodeElement(struct {
			Name  string   `xml:"Name"`
			Value valueXML `xml:"Value"`
		}{k, x}, xml.StartElement{Name: xml.Name{Local: start.Name.Local}}); err != nil {
			return err
		}
	}
	return nil
}

package sqs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AWS Signature Version 4, verified by computing the signature again from the request (the
// header form: Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…;
// the presigned form: X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires,
// X-Amz-SignedHeaders, X-Amz-Signature in the query string).

const (
	sigAlgorithm = "AWS4-HMAC-SHA256"
	amzDateFmt   = "20060102T150405Z"
	// maxSkew is how far a request's signing time may be from the server's clock.
	maxSkew = 5 * time.Minute
	// maxPresignExpiry is SigV4's limit on X-Amz-Expires (7 days).
	maxPresignExpiry = 7 * 24 * time.Hour
	serviceName      = "sqs"
)

// sigRequest is a parsed SigV4 signature: what the client claims before it is checked.
type sigRequest struct {
	AccessKey     string
	Date          string // yyyymmdd of the credential scope
	Region        string
	Service       string
	SignedHeaders []string
	Signature     string
	AmzDate       time.Time
	Presigned     bool
	Expires       time.Duration // presigned only
}

// parseAuthorization reads the header form's Authorization value.
func parseAuthorization(h string) (sigRequest, *Error) {
	var s sigRequest
	alg, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || alg != sigAlgorithm {
		return s, newErr(errIncompleteSignature, "Authorization must be %s with Credential, SignedHeaders and Signature", sigAlgorithm)
	}
	var cred, signed, sig string
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return s, newErr(errIncompleteSignature, "malformed Authorization component %q", part)
		}
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			sig = v
		}
	}
	if cred == "" || signed == "" || sig == "" {
		return s, newErr(errIncompleteSignature, "Authorization needs Credential, SignedHeaders and Signature")
	}
	if err := s.setCredential(cred); err != nil {
		return s, err
	}
	s.SignedHeaders = strings.Split(signed, ";")
	s.Signature = sig
	return s, nil
}

// parsePresigned reads the presigned form from the query string.
func parsePresigned(q url.Values) (sigRequest, *Error) {
	var s sigRequest
	if q.Get("X-Amz-Algorithm") != sigAlgorithm {
		return s, newErr(errIncompleteSignature, "X-Amz-Algorithm must be %s", sigAlgorithm)
	}
	for _, k := range []string{"X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		if q.Get(k) == "" {
			return s, newErr(errIncompleteSignature, "the presigned request lacks %s", k)
		}
	}
	if err := s.setCredential(q.Get("X-Amz-Credential")); err != nil {
		return s, err
	}
	// Without X-Amz-Expires a presigned request is good for the clock tolerance.
	secs, err := int(maxSkew/time.Second), error(nil)
	if e := q.Get("X-Amz-Expires"); e != "" {
		secs, err = strconv.Atoi(e)
	}
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxPresignExpiry {
		return s, newErr(errIncompleteSignature, "X-Amz-Expires must be 1 to %d seconds", int(maxPresignExpiry/time.Second))
	}
	t, terr := time.Parse(amzDateFmt, q.Get("X-Amz-Date"))
	if terr != nil {
		return s, newErr(errIncompleteSignature, "X-Amz-Date must be yyyymmddThhmmssZ")
	}
	s.AmzDate, s.Presigned, s.Expires = t, true, time.Duration(secs)*time.Second
	s.SignedHeaders = strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	s.Signature = q.Get("X-Amz-Signature")
	return s, nil
}

// checkCoverage refuses a signature that leaves out what decides the request: the host it
// was meant for and, when X-Amz-Target names the action, that header. Without them, a
// signature captured for one action or server could be replayed with another. A presigned
// request that does not sign a target it carries is a signature that does not match (the
// action would not be the signed one); a header signature that omits either is incomplete.
func (s *sigRequest) checkCoverage(r *http.Request) *Error {
	if !slices.Contains(s.SignedHeaders, "host") {
		return newErr(errIncompleteSignature, "the signature must cover the host header (SignedHeaders lacks host)")
	}
	if r.Header.Get("X-Amz-Target") == "" || slices.Contains(s.SignedHeaders, "x-amz-target") {
		return nil
	}
	if s.Presigned {
		return newErr(errSignature, "the presigned request carries an X-Amz-Target header it did not sign")
	}
	return newErr(errIncompleteSignature, "the signature must cover the X-Amz-Target header (SignedHeaders lacks x-amz-target)")
}

// setCredential reads "<access key>/<yyyymmdd>/<region>/<service>/aws4_request".
func (s *sigRequest) setCredential(c string) *Error {
	parts := strings.Split(c, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" || parts[0] == "" || len(parts[1]) != 8 || parts[2] == "" {
		return newErr(errIncompleteSignature, "Credential must be <access key id>/<date>/<region>/sqs/aws4_request")
	}
	if parts[3] != serviceName {
		return newErr(errSignature, "Credential should be scoped to the service %q, not %q", serviceName, parts[3])
	}
	s.AccessKey, s.Date, s.Region, s.Service = parts[0], parts[1], parts[2], parts[3]
	return nil
}

// checkTime enforces the clock tolerance (and a presigned request's expiry) against now.
func (s *sigRequest) checkTime(now time.Time) *Error {
	if s.Date != s.AmzDate.Format("20060102") {
		return newErr(errSignature, "the credential's date %s is not the request's date %s", s.Date, s.AmzDate.Format(amzDateFmt))
	}
	if s.AmzDate.After(now.Add(maxSkew)) {
		return newErr(errSignature, "Signature not yet current: %s is still later than %s (now + 5 min.)", s.AmzDate.Format(amzDateFmt), now.Add(maxSkew).UTC().Format(amzDateFmt))
	}
	limit := maxSkew
	if s.Presigned {
		limit = s.Expires
	}
	if now.Sub(s.AmzDate) > limit {
		return newErr(errSignature, "Signature expired: %s is now earlier than %s", s.AmzDate.Format(amzDateFmt), now.Add(-limit).UTC().Format(amzDateFmt))
	}
	return nil
}

// signature computes the request's signature with secret. payloadHash is the hex SHA-256 of
// the body (or the presigned form's declared hash).
func (s *sigRequest) signature(r *http.Request, secret, payloadHash string) string {
	scope := s.Date + "/" + s.Region + "/" + s.Service + "/aws4_request"
	sum := sha256.Sum256([]byte(s.canonicalRequest(r, payloadHash)))
	toSign := sigAlgorithm + "\n" + s.AmzDate.Format(amzDateFmt) + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	k := hmacSHA256([]byte("AWS4"+secret), s.Date)
	k = hmacSHA256(k, s.Region)
	k = hmacSHA256(k, s.Service)
	k = hmacSHA256(k, "aws4_request")
	return hex.EncodeToString(hmacSHA256(k, toSign))
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func (s *sigRequest) canonicalRequest(r *http.Request, payloadHash string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(awsEscape(path, false))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery, s.Presigned))
	b.WriteByte('\n')
	for _, h := range s.SignedHeaders {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(s.SignedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// headerValue is a signed header's canonical value: values joined by commas, each trimmed
// and with inner runs of spaces collapsed.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "content-length":
		if r.ContentLength >= 0 && r.Header.Get("Content-Length") == "" {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		} else {
			vals = r.Header.Values(name)
		}
	default:
		vals = r.Header.Values(name)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

// canonicalQuery sorts the query's parameters by name then value, each AWS-escaped; the
// presigned form leaves out its own signature.
func canonicalQuery(raw string, presigned bool) string {
	if raw == "" {
		return ""
	}
	type kv struct{ k, v string }
	var kvs []kv
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		uk, err1 := url.QueryUnescape(k)
		uv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			uk, uv = k, v
		}
		if presigned && uk == "X-Amz-Signature" {
			continue
		}
		kvs = append(kvs, kv{awsEscape(uk, true), awsEscape(uv, true)})
	}
	sort.Slice(kvs, func(i, j int) bool {
		if kvs[i].k != kvs[j].k {
			return kvs[i].k < kvs[j].k
		}
		return kvs[i].v < kvs[j].v
	})
	parts := make([]string, len(kvs))
	for i, p := range kvs {
		parts[i] = p.k + "=" + p.v
	}
	return strings.Join(parts, "&")
}

// awsEscape percent-encodes every byte but A-Z a-z 0-9 - _ . ~ (and '/' in a path).
func awsEscape(s string, encodeSlash bool) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexd[c>>4])
			b.WriteByte(hexd[c&15])
		}
	}
	return b.String()
}

// signatureMatches compares signatures in constant time.
func signatureMatches(got, want string) bool {
	return hmac.Equal([]byte(strings.ToLower(got)), []byte(want))
}

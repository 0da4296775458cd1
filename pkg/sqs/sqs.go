// Package sqs is the SQS door to the service's queues (docs/sqs.md): Amazon SQS's JSON 1.0
// protocol (X-Amz-Target: AmazonSQS.<Action>) and its older query protocol (form-encoded
// Action=…, XML answers), both verified with AWS Signature Version 4 and served on the same
// paths as the /v1 API. Each action decodes its SQS input, calls the same operations the /v1
// handlers call (the service layer's, pkg/service, through Backend) and encodes SQS's answer.
package sqs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/service"
)

// Backend is what the door needs of the service: the operations /v1 calls too (package
// service's Service implements it).
type Backend interface {
	NewQueue(project ids.ID, name, typ string) meta.Queue
	CreateQueue(ctx context.Context, q meta.Queue) error
	UpdateQueue(ctx context.Context, q meta.Queue, change func(*meta.Queue) error) (meta.Queue, error)
	DeleteQueue(ctx context.Context, q meta.Queue) error
	LookupQueue(ctx context.Context, project ids.ID, ref string) (meta.Queue, error)
	// QueueByName finds a queue by name only: SQS names queues by name, and a UUID-shaped
	// name may equal another queue's id, which LookupQueue would try first.
	QueueByName(ctx context.Context, project ids.ID, name string) (meta.Queue, error)
	ListQueues(ctx context.Context, project ids.ID, prefix string, page meta.Page) ([]meta.Queue, string, error)
	QueueByID(ctx context.Context, id ids.ID) (meta.Queue, error)
	ApplyRedrive(ctx context.Context, q *meta.Queue, dlq *ids.ID, maxReceiveCount int) error
	Stats(ctx context.Context, q meta.Queue) (engine.Stats, error)
	Purge(ctx context.Context, q meta.Queue) error
	Send(ctx context.Context, q meta.Queue, msgs []engine.Message) ([]engine.SendResult, error)
	Receive(ctx context.Context, q meta.Queue, req engine.ReceiveRequest, wait time.Duration) ([]engine.Received, error)
	Receipts() *receipt.Signer
	Ack(ctx context.Context, ds []engine.Delivery) ([]error, error)
	ChangeVisibility(ctx context.Context, cs []engine.VisibilityChange) ([]error, error)
	TokenProject(ctx context.Context, token ids.ID) (ids.ID, error)
	TokenPrincipal(ctx context.Context, project, token ids.ID) (auth.Principal, error)
	// Admit applies the project's request rate to one call and meters it; MeterDelivered
	// meters received messages once the answer is written.
	Admit(ctx context.Context, project ids.ID) error
	// AdmitSend admits a send (service.AdmitSend: the one admission of every door's sends);
	// the admitted send meters it once the answer is written.
	AdmitSend(ctx context.Context, req service.SendRequest) (*service.AdmittedSend, error)
	MeterDelivered(project ids.ID, msgs []engine.Received)
}

// Config wires the door.
type Config struct {
	Backend Backend
	Auth    *auth.Authority
	Clock   clock.Clock
	Logger  *slog.Logger
	// StorageTimeout bounds one request's storage work outside long polls (default 10 s).
	StorageTimeout time.Duration
	// Attempts remembers fifo receives by ReceiveRequestAttemptId (nil: in this process).
	Attempts Attempts
	// MoveTasks serves the message move task actions (nil: they answer InvalidAction).
	MoveTasks MoveTasks
}

// Door serves the SQS protocols.
type Door struct {
	cfg Config
}

// New returns the door.
func New(cfg Config) *Door {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.StorageTimeout <= 0 {
		cfg.StorageTimeout = 10 * time.Second
	}
	if cfg.Attempts == nil {
		cfg.Attempts = NewMemAttempts(cfg.Clock)
	}
	return &Door{cfg: cfg}
}

// Paths the door answers on: the root, /sqs, and queue URLs /sqs/<project slug>/<queue name>.
const (
	PathRoot  = "/"
	PathSQS   = "/sqs"
	queuePath = "/sqs/"
)

// Mount registers the door's routes on e (POST, and GET for the query protocol).
func (d *Door) Mount(e *echo.Echo) {
	h := echo.WrapHandler(d)
	for _, p := range []string{PathRoot, PathSQS, queuePath + ":project/:queue"} {
		e.POST(p, h)
		e.GET(p, h)
	}
}

// maxBody bounds a request (a batch of at most 1 MiB of messages, their attributes and the
// encoding).
const maxBody = 3 << 20

// protocol is how a request was sent and must be answered.
type protocol int

const (
	protoJSON protocol = iota
	protoQuery
)

// call is one request being served.
type call struct {
	r         *http.Request
	proto     protocol
	action    string
	input     []byte // the JSON protocol's input document (the query protocol's, rebuilt)
	bodyBytes int    // the request body's length
	requestID string
	principal auth.Principal
	// live is the token's principal when admitLargeBody read it before the signature.
	live       *auth.Principal
	regionName string // the signature's region, for ARNs
	// pathQueue is the queue URL the request was posted to, if any.
	pathQueue string
	// answered runs once the answer is written (metering).
	answered []func()
}

func (d *Door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &call{r: r, requestID: ids.New().String()}
	out, err := d.serve(c)
	if err != nil {
		d.writeError(w, c, fromAPI(err))
		return
	}
	d.writeOutput(w, c, out)
	for _, f := range c.answered {
		f()
	}
}

func (d *Door) serve(c *call) (any, error) {
	r := c.r
	if r.ContentLength > maxBody {
		return nil, newErr(errBatchTooLong, "the request body is over %d bytes", maxBody)
	}
	body, err := d.readBody(c)
	if err != nil {
		return nil, err
	}
	c.bodyBytes = len(body)
	if strings.HasPrefix(r.URL.Path, queuePath) {
		c.pathQueue = r.URL.Path
	}
	if err := c.decode(body); err != nil {
		return nil, err
	}
	act, ok := actions[c.action]
	if ok && d.cfg.MoveTasks == nil && (strings.HasSuffix(c.action, "MessageMoveTask") || strings.HasSuffix(c.action, "MessageMoveTasks")) {
		ok = false
	}
	if !ok {
		return nil, newErr(errInvalidAction, "The action %s is not valid for this endpoint.", c.action)
	}
	if err := d.authenticate(c, body, act.scope); err != nil {
		return nil, err
	}
	// The project's request rate covers this door as it does /v1 (docs/tenancy.md).
	if err := d.cfg.Backend.Admit(r.Context(), c.principal.ProjectID); err != nil {
		return nil, err
	}
	return act.run(d, c)
}

// maxUnauthenticatedBody is how much of a body is read before anything is known of its
// sender: every action's input fits in it but a batch of large messages.
const maxUnauthenticatedBody = 64 << 10

// readBody reads the request body: up to maxUnauthenticatedBody at once, and the rest (up to
// maxBody) only once the signature's access key names a live token, so that a caller
// without one cannot make the door read and hash megabytes. The signature itself still
// covers the whole body: it is verified once the body is read.
func (d *Door) readBody(c *call) ([]byte, error) {
	rd := http.MaxBytesReader(nil, c.r.Body, maxBody)
	body, err := io.ReadAll(io.LimitReader(rd, maxUnauthenticatedBody+1))
	if err == nil && len(body) > maxUnauthenticatedBody {
		if err := d.admitLargeBody(c); err != nil {
			return nil, err
		}
		var rest []byte
		rest, err = io.ReadAll(rd)
		body = append(body, rest...)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, newErr(errBatchTooLong, "the request body is over %d bytes", maxBody)
		}
		return nil, newErr(errMalformedQuery, "could not read the request body")
	}
	return body, nil
}

// admitLargeBody lets a body over maxUnauthenticatedBody be read: the signature must be
// well formed and current, and its access key a live (known, unrevoked, unexpired) token.
// The token's principal is kept for authenticate.
func (d *Door) admitLargeBody(c *call) error {
	if c.r.Header.Get("X-Amz-Target") == "" && !strings.HasPrefix(strings.ToLower(c.r.Header.Get("Content-Type")), "application/x-amz-json") {
		c.proto = protoQuery // the answer's shape, until decode knows better
	}
	_, tokenID, err := d.parseSignature(c)
	if err != nil {
		return err
	}
	p, err := d.tokenPrincipal(c, tokenID)
	if err != nil {
		return err
	}
	c.live = &p
	return nil
}

// decode finds the protocol and action and the input document.
func (c *call) decode(body []byte) *Error {
	r := c.r
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		c.proto = protoJSON
		svc, action, ok := strings.Cut(target, ".")
		if !ok || svc != "AmazonSQS" {
			return newErr(errInvalidAction, "unknown X-Amz-Target %q", target)
		}
		c.action = action
		// An Action in the query string too must name the same action: which of two
		// would run is not for the request to leave open.
		for _, a := range r.URL.Query()["Action"] {
			if a != action {
				return newErr(errInvalidAction, "the request names two actions: X-Amz-Target %s and Action %s", action, a)
			}
		}
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		c.input = body
		return nil
	}
	c.proto = protoQuery
	form, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return newErr(errMalformedQuery, "the query string is malformed")
	}
	if r.Method == http.MethodPost && len(body) > 0 {
		ct := strings.ToLower(r.Header.Get("Content-Type"))
		if strings.HasPrefix(ct, "application/x-amz-json") {
			c.proto = protoJSON
			return newErr(errMissingAction, "send X-Amz-Target: AmazonSQS.<Action> with a JSON 1.0 body")
		}
		bf, err := url.ParseQuery(string(body))
		if err != nil {
			return newErr(errMalformedQuery, "the form body is malformed")
		}
		for k, vs := range bf {
			form[k] = append(form[k], vs...)
		}
	}
	c.action = form.Get("Action")
	if c.action == "" {
		return newErr(errMissingAction, "The request must contain the parameter Action.")
	}
	for _, a := range form["Action"] {
		if a != c.action {
			return newErr(errInvalidAction, "the request names two actions: %s and %s", c.action, a)
		}
	}
	for k := range form {
		if k == "Action" || k == "Version" || strings.HasPrefix(k, "X-Amz-") || k == "AWSAccessKeyId" {
			delete(form, k)
		}
	}
	in, qerr := queryToJSON(form)
	if qerr != nil {
		return qerr
	}
	c.input = in
	return nil
}

// authenticate verifies the signature, then the token's record and the action's scope.
// Nothing touches storage until the signature is proven (but for a large body, which
// admitLargeBody has already tied to a live token).
func (d *Door) authenticate(c *call, body []byte, scope string) error {
	sr, tokenID, err := d.parseSignature(c)
	if err != nil {
		return err
	}
	if err := d.verifySignature(c, sr, tokenID, body); err != nil {
		return err
	}
	c.regionName = sr.Region
	var p auth.Principal
	if c.live != nil && c.live.TokenID == tokenID {
		p = *c.live
	} else if p, err = d.tokenPrincipal(c, tokenID); err != nil {
		return err
	}
	if scope != "" && !p.Has(scope) {
		return newErr(errAccessDenied, "The token lacks the %q scope that %s needs.", scope, c.action)
	}
	c.principal = p
	return nil
}

// parseSignature reads the request's signature (header or presigned form) and checks what
// needs no secret: its form, what it covers, its access key's form and its time.
func (d *Door) parseSignature(c *call) (sigRequest, ids.ID, error) {
	r := c.r
	var sr sigRequest
	var perr *Error
	switch {
	case r.Header.Get("Authorization") != "":
		sr, perr = parseAuthorization(r.Header.Get("Authorization"))
		if perr == nil {
			date := r.Header.Get("X-Amz-Date")
			t, err := time.Parse(amzDateFmt, date)
			if err != nil {
				return sr, ids.ID{}, newErr(errIncompleteSignature, "X-Amz-Date must be yyyymmddThhmmssZ")
			}
			sr.AmzDate = t
		}
	case r.URL.Query().Get("X-Amz-Signature") != "":
		sr, perr = parsePresigned(r.URL.Query())
	default:
		return sr, ids.ID{}, newErr(errMissingAuth, "Request is missing Authentication Token")
	}
	if perr != nil {
		return sr, ids.ID{}, perr
	}
	if err := sr.checkCoverage(r); err != nil {
		return sr, ids.ID{}, err
	}
	tokenID, err := ids.ParseSlug(ids.TokenPrefix, sr.AccessKey)
	if err != nil {
		return sr, ids.ID{}, newErr(errInvalidClientToken, "The security token included in the request is invalid.")
	}
	if err := sr.checkTime(d.cfg.Clock.Now()); err != nil {
		return sr, ids.ID{}, err
	}
	return sr, tokenID, nil
}

// verifySignature computes the signature again over the request and its body with each of
// the token's secrets.
func (d *Door) verifySignature(c *call, sr sigRequest, tokenID ids.ID, body []byte) error {
	r := c.r
	sum := sha256.Sum256(body)
	hashes := []string{hex.EncodeToString(sum[:])}
	// A presigned request may leave its payload unsigned (as SDKs presign) only when it has
	// none: its action and parameters are then all in the signed query string.
	if sr.Presigned && len(body) == 0 {
		hashes = append(hashes, "UNSIGNED-PAYLOAD")
	} else if h := r.Header.Get("X-Amz-Content-Sha256"); !sr.Presigned && h != "" && h != hashes[0] {
		return newErr(errSignature, "X-Amz-Content-Sha256 does not match the body")
	}
	for _, secret := range d.cfg.Auth.SQSSecrets(tokenID) {
		for _, h := range hashes {
			if signatureMatches(sr.Signature, sr.signature(r, secret, h)) {
				return nil
			}
		}
	}
	return newErr(errSignature, "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")
}

// tokenPrincipal reads the token's record (through the metadata cache): an unknown,
// revoked or expired token is InvalidClientTokenId.
func (d *Door) tokenPrincipal(c *call, tokenID ids.ID) (auth.Principal, error) {
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	project, err := d.cfg.Backend.TokenProject(ctx, tokenID)
	if apierr.CodeOf(err) == apierr.NotFound {
		return auth.Principal{}, newErr(errInvalidClientToken, "The security token included in the request is invalid.")
	} else if err != nil {
		return auth.Principal{}, err
	}
	return d.cfg.Backend.TokenPrincipal(ctx, project, tokenID)
}

func (d *Door) storageCtx(c *call) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.r.Context(), d.cfg.StorageTimeout)
}

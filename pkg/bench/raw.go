package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// rawPool is the generator's HTTP/1.1 client for plain-http URLs: keep-alive connections
// used from the calling goroutine, one write per request and a buffered read of the answer.
// net/http's client runs a reader and a writer goroutine per connection and hands every
// request and answer between them, which cost the generator a fifth of its CPU, CPU it
// shares with the service it measures. Anything it does not follow (an answer without a
// length it can read, a protocol error) closes that connection and fails that request.
type rawPool struct {
	addr string // host:port to dial
	host string // Host header

	mu   sync.Mutex
	idle []*rawConn
}

type rawConn struct {
	c    net.Conn
	br   *bufio.Reader
	wbuf []byte
	body bytes.Buffer
}

// newRawPool returns a pool for base, or nil when base is not a plain-http URL.
func newRawPool(base string) *rawPool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &rawPool{addr: addr, host: u.Host}
}

// get returns an idle connection (reused true) or a new one.
func (p *rawPool) get(ctx context.Context, fresh bool) (rc *rawConn, reused bool, err error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 && !fresh {
		rc := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return rc, true, nil
	}
	p.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	return &rawConn{c: c, br: bufio.NewReaderSize(c, 16<<10)}, false, nil
}

func (p *rawPool) put(rc *rawConn) {
	p.mu.Lock()
	p.idle = append(p.idle, rc)
	p.mu.Unlock()
}

func (p *rawPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rc := range p.idle {
		rc.c.Close()
	}
	p.idle = nil
}

// rawAnswer is an answer: its status, Retry-After, and body (valid until release).
type rawAnswer struct {
	status     int
	retryAfter string
	body       []byte
	rc         *rawConn
	keep       bool
}

// do sends one request and reads its answer. On an error the connection is closed. A
// request that found a reused connection closed by the server (the end of the stream before
// any answer, as after an idle timeout) is sent again once on a new one, as net/http does.
func (p *rawPool) do(ctx context.Context, method, path string, body []byte, token string) (*rawAnswer, error) {
	for fresh := false; ; fresh = true {
		rc, reused, err := p.get(ctx, fresh)
		if err != nil {
			return nil, err
		}
		// The context bounds the exchange: its end (deadline included) interrupts a blocked
		// read or write, and by then ctx.Err() says why, so the caller sees the context's
		// error rather than an i/o timeout.
		_ = rc.c.SetDeadline(time.Time{})
		stop := context.AfterFunc(ctx, func() { _ = rc.c.SetDeadline(time.Unix(1, 0)) })
		ans, err := rc.exchange(method, p.host, path, body, token)
		if !stop() && ans != nil {
			ans.keep = false // the context ended meanwhile: the connection's deadline is spent
		}
		if err == nil {
			return ans, nil
		}
		rc.c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if reused && !fresh && errors.Is(err, errClosedBeforeAnswer) {
			continue
		}
		return nil, err
	}
}

// errClosedBeforeAnswer: the server closed the connection before the first byte of an answer.
var errClosedBeforeAnswer = errors.New("bench: connection closed before an answer")

// release returns the answer's connection to the pool (or closes it).
func (p *rawPool) release(a *rawAnswer) {
	if a.keep {
		p.put(a.rc)
	} else {
		a.rc.c.Close()
	}
}

var errRaw = errors.New("bench: unexpected HTTP answer")

func (rc *rawConn) exchange(method, host, path string, body []byte, token string) (*rawAnswer, error) {
	b := rc.wbuf[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nUser-Agent: queues-bench\r\n"...)
	if token != "" {
		b = append(b, "Authorization: Bearer "...)
		b = append(b, token...)
		b = append(b, "\r\n"...)
	}
	if body != nil {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n\r\n"...)
		b = append(b, body...)
	} else {
		b = append(b, "Content-Length: 0\r\n\r\n"...)
	}
	rc.wbuf = b
	if _, err := rc.c.Write(b); err != nil {
		return nil, err
	}

	line, err := rc.line()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("%w: %v", errClosedBeforeAnswer, err)
		}
		return nil, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return nil, fmt.Errorf("%w: status line %q", errRaw, line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return nil, fmt.Errorf("%w: status line %q", errRaw, line)
	}
	a := &rawAnswer{status: status, rc: rc, keep: line[7] == '1'}
	length, chunked := -1, false
	for {
		h, err := rc.line()
		if err != nil {
			return nil, err
		}
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return nil, fmt.Errorf("%w: header %q", errRaw, h)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil || length < 0 {
				return nil, fmt.Errorf("%w: Content-Length %q", errRaw, v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
			if !chunked {
				return nil, fmt.Errorf("%w: Transfer-Encoding %q", errRaw, v)
			}
		case bytes.EqualFold(k, []byte("Connection")):
			if bytes.EqualFold(v, []byte("close")) {
				a.keep = false
			}
		case bytes.EqualFold(k, []byte("Retry-After")):
			a.retryAfter = string(v)
		}
	}
	rc.body.Reset()
	switch {
	case status == 204 || status == 304 || method == "HEAD":
	case chunked:
		if err := rc.chunks(); err != nil {
			return nil, err
		}
	case length >= 0:
		if _, err := io.CopyN(&rc.body, rc.br, int64(length)); err != nil {
			return nil, err
		}
	default: // no length: the answer ends with the connection
		if _, err := rc.body.ReadFrom(rc.br); err != nil {
			return nil, err
		}
		a.keep = false
	}
	a.body = rc.body.Bytes()
	return a, nil
}

// line reads one header line without its CRLF.
func (rc *rawConn) line() ([]byte, error) {
	l, err := rc.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: header line too long", errRaw)
		}
		return nil, err
	}
	return bytes.TrimRight(l, "\r\n"), nil
}

func (rc *rawConn) chunks() error {
	for {
		l, err := rc.line()
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(l, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: chunk size %q", errRaw, l)
		}
		if n == 0 {
			for { // trailers, then the empty line
				t, err := rc.line()
				if err != nil {
					return err
				}
				if len(t) == 0 {
					return nil
				}
			}
		}
		if _, err := io.CopyN(&rc.body, rc.br, n); err != nil {
			return err
		}
		if crlf, err := rc.line(); err != nil || len(crlf) != 0 {
			return fmt.Errorf("%w: chunk end", errRaw)
		}
	}
}

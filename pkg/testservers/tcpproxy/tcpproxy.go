// Package tcpproxy is a TCP proxy for fault tests: it sits between a client and a server on
// 127.0.0.1 and can hold the server's replies (a slow or stalled server as the client sees
// it), release them, cut every connection, or refuse new ones.
package tcpproxy

import (
	"net"
	"sync"
)

// Proxy forwards connections to one target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	hold    bool
	held    int // reply bytes held back now
	conns   map[*pair]struct{}
	closed  bool
	refused bool
	wg      sync.WaitGroup
}

type pair struct{ client, server net.Conn }

func (p *pair) close() {
	_ = p.client.Close()
	_ = p.server.Close()
}

// Start listens on a free port of 127.0.0.1 and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := p.refused
		p.mu.Unlock()
		if refused {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		pr := &pair{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pr.close()
			return
		}
		p.conns[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(pr, c, s, false)
		go p.pipe(pr, s, c, true)
	}
}

// pipe copies src to dst; replies (server to client) wait while the proxy holds.
func (p *Proxy) pipe(pr *pair, src, dst net.Conn, reply bool) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pr)
		p.mu.Unlock()
		pr.close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && reply {
			p.mu.Lock()
			if p.hold {
				p.held += n
				p.cond.Broadcast()
				for p.hold && !p.closed {
					if _, ok := p.conns[pr]; !ok {
						break
					}
					p.cond.Wait()
				}
				p.held -= n
				_, live := p.conns[pr]
				p.mu.Unlock()
				if !live {
					return // cut while held: the reply is dropped
				}
			} else {
				p.mu.Unlock()
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a broken connection: both sides close
		}
	}
}

// Hold holds back every reply from now on, until Release or Cut.
func (p *Proxy) Hold() {
	p.mu.Lock()
	p.hold = true
	p.mu.Unlock()
}

// Held is how many reply bytes are held back now.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// WaitHeld blocks until some reply is held back.
func (p *Proxy) WaitHeld() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held == 0 && !p.closed {
		p.cond.Wait()
	}
}

// Release forwards the held replies and stops holding.
func (p *Proxy) Release() {
	p.mu.Lock()
	p.hold = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Cut closes every connection (dropping held replies) and stops holding; new connections
// are forwarded again.
func (p *Proxy) Cut() {
	p.mu.Lock()
	prs := make([]*pair, 0, len(p.conns))
	for pr := range p.conns {
		prs = append(prs, pr)
		delete(p.conns, pr)
	}
	p.hold = false
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, pr := range prs {
		pr.close()
	}
}

// SetTarget sends new connections to addr (a failover to another server); existing ones
// stay until Cut.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// Refuse makes the proxy close new connections at once (a server that is down), or accept
// them again.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refused = on
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
}

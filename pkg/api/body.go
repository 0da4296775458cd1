package api

import "io"

// initialBodyBuffer is the most readUpTo reserves before bytes arrive. Content-Length is a
// promise, not bytes: reserving it whole let idle connections that announce 3 MiB and send one
// byte hold gigabytes. Past this the buffer grows (doubling) only as the body arrives.
const initialBodyBuffer = 16 << 10

// readUpTo reads r to its end. announced is the declared length (-1 if unknown): it sizes the
// first buffer, up to initialBodyBuffer, and a body shorter than announced is an error.
func readUpTo(r io.Reader, announced int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(announced, 512), initialBodyBuffer))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // let append pick the next size
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if announced > 0 && int64(len(buf)) < announced {
				return nil, io.ErrUnexpectedEOF
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

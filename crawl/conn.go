package crawl

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder"
)

// httpConn is one HTTP/1.1 connection (TLS for https) to one host, used for
// one request after another while the server keeps it open.
type httpConn struct {
	key          string // where the visit keeps it (see conns)
	scheme, host string
	ip           netip.Addr
	nc           net.Conn      // TLS for https
	raw          net.Conn      // the TCP connection under nc
	fc           *finishedConn // between nc and raw, for https
	br           *bufio.Reader // nil between responses (see reader)
	first        firstByte     // the source of br for https
	stop         func() bool
	usable       bool
}

// close closes the TCP connection without a TLS close_notify alert: the
// responses are framed by HTTP, so the alert (an encryption and a write
// per connection) tells the server nothing it needs.
func (hc *httpConn) close() {
	hc.stop()
	hc.raw.Close()
	hc.usable = false
}

// done finishes with resp: the rest of a short body is read so the
// connection can carry the next request; a long one closes it.
func (hc *httpConn) done(resp *http.Response) {
	const drainMax = 64 << 10
	n, err := io.CopyN(io.Discard, resp.Body, drainMax)
	resp.Body.Close()
	if !(err == io.EOF && n < drainMax) || resp.Close {
		hc.close()
	} else if hc.br.Buffered() == 0 {
		hc.free() // no reader held while the connection waits for the next request
	}
}

// reader gives hc a response reader, unless it holds one still: for
// https, only once the response's first byte has come, so that a visit
// waiting on its server holds no reader. The TLS connection keeps the rest
// of the record it decrypted, so reading one byte first costs no system
// call. Its error is that of reading the first byte, as
// http.ReadResponse would have returned it.
func (hc *httpConn) reader() error {
	if hc.br != nil {
		return nil
	}
	src := io.Reader(hc.nc)
	if hc.scheme == "https" {
		n, err := hc.readFirst()
		if n == 0 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		hc.first.has, hc.first.r = true, hc.nc
		src = &hc.first
	}
	hc.br = readers.Get().(*bufio.Reader)
	hc.br.Reset(src)
	return nil
}

// readFirst reads the first byte of a response into hc.first. A visit
// spends most of its life here, waiting for its server; a parked
// goroutine keeps its whole stack, and the collector halves it only when
// less than a quarter is in use. Waiting inside the TLS read would keep
// crypto/tls's deep call chain on the stack, so readFirst first asks the
// TLS connection, with fc peeking, for a byte it already holds (a record
// it read along with an earlier one), and when it holds none waits for
// the TCP connection to become readable (see awaitReadable) before the
// read. The wait decides only when the read is made, never what it
// returns: when the wait ends early (a deadline, ctx cancelled, the
// connection closed) the read returns that error at once.
func (hc *httpConn) readFirst() (int, error) {
	if hc.fc != nil {
		hc.fc.peek = true
		n, err := hc.nc.Read(hc.first.b[:])
		hc.fc.peek = false
		if err != errWouldWait {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
		awaitReadable(hc.raw)
	}
	return hc.nc.Read(hc.first.b[:])
}

// firstByte reads a byte already read from r, then from r.
type firstByte struct {
	b   [1]byte
	has bool
	r   io.Reader
}

func (f *firstByte) Read(p []byte) (int, error) {
	if f.has && len(p) > 0 {
		p[0], f.has = f.b[0], false
		return 1, nil
	}
	return f.r.Read(p)
}

// readerSize is the size of a connection's response reader. The reader
// sits on the TLS connection, which keeps the record it decrypted, so a
// small one costs copies, not system calls; a header line longer than it
// is still read whole, and a body read of at least its size bypasses it.
// It is held while a response is read: at thousands of visits in flight
// every KiB of it is a KiB of memory per visit.
const readerSize = 1024

// readers holds the connections' response readers between connections,
// so a visit does not allocate (and the collector clear) a new one for
// each.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readerSize) }}

// free gives hc's reader back to readers, when it has one. Its unread
// bytes are lost: hc must be closed, never read again, or its reader
// empty.
func (hc *httpConn) free() {
	if hc.br != nil {
		hc.br.Reset(nil)
		readers.Put(hc.br)
		hc.br = nil
	}
}

// conns holds the visit's open connections, each under its key (scheme,
// host and port): a few at most, so a slice searched in turn rather than
// a map, which would sit on the stack under every wait of the visit.
type conns []*httpConn

// get returns the connection stored under key, or nil.
func (cs conns) get(key string) *httpConn {
	for _, hc := range cs {
		if hc.key == key {
			return hc
		}
	}
	return nil
}

// put stores hc under key, freeing the closed connection it replaces.
func (cs *conns) put(key string, hc *httpConn) {
	hc.key = key
	for i, old := range *cs {
		if old.key == key {
			old.free()
			(*cs)[i] = hc
			return
		}
	}
	*cs = append(*cs, hc)
}

// closeAll closes every connection still open and frees them all.
func (cs conns) closeAll() {
	for _, hc := range cs {
		if hc.usable {
			hc.close()
		}
		hc.free()
	}
}

// connect dials addrs in turn (the next one only when a connect fails) and,
// for https, completes a TLS handshake with SNI host without verifying the
// certificate: onCert, unless nil, gets the connection's state to verify
// and record it (see handshake), so that a bad certificate is recorded
// rather than lost.
func (p *visit) connect(ctx context.Context, scheme, host, port string, addrs []netip.Addr, onCert func(*tls.ConnectionState)) (*httpConn, error) {
	cctx, cancel := context.WithTimeout(ctx, p.c.cfg.ConnectTimeout)
	defer cancel()
	nc, ip, err := p.dialFirst(cctx, port, addrs)
	if err != nil {
		return nil, err
	}
	raw := nc
	if scheme == "https" {
		if nc, raw, err = p.secure(cctx, nc, ip, port, host, onCert); err != nil {
			return nil, err
		}
	}
	// No deadline yet: each request sets its own (see visit.do) before
	// any I/O. Cancellation of ctx (not only its deadline) interrupts any
	// I/O.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	hc := &httpConn{scheme: scheme, host: host, ip: ip, nc: nc, raw: raw, stop: stop, usable: true}
	if tc, ok := nc.(*tls.Conn); ok {
		hc.fc, _ = tc.NetConn().(*finishedConn)
	}
	return hc, nil
}

// secure completes a TLS handshake over nc, the connection to ip, offering
// curvesFirst, and when the server refuses the handshake, once more over a
// new connection offering curvesFallback; onCert is handshake's. It
// returns the TLS connection and the TCP connection under it.
func (p *visit) secure(cctx context.Context, nc net.Conn, ip netip.Addr, port, host string, onCert func(*tls.ConnectionState)) (net.Conn, net.Conn, error) {
	tc, err := handshake(cctx, nc, host, curvesFirst, onCert)
	if err == nil || !isHandshakeFailure(err) || cctx.Err() != nil {
		return tc, nc, err
	}
	if nc, _, err = p.dialFirst(cctx, port, []netip.Addr{ip}); err != nil {
		return nil, nil, err
	}
	tc, err = handshake(cctx, nc, host, curvesFallback, onCert)
	return tc, nc, err
}

// dialFirst connects to the first of addrs on port that accepts, trying the
// next only after a refusal or failure and never once cctx (the connect
// timeout) has ended. When none connects the error is a timeout if cctx
// ended, else a connect error with the last failure.
func (p *visit) dialFirst(cctx context.Context, port string, addrs []netip.Addr) (net.Conn, netip.Addr, error) {
	var nc net.Conn
	var ip netip.Addr
	var err error
	for _, a := range addrs {
		nc, err = p.c.cfg.Dial(cctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			ip = a
			break
		}
		if cctx.Err() != nil {
			break
		}
	}
	if nc == nil {
		if cctx.Err() != nil {
			return nil, ip, &stepError{spyder.StatusTimeout, fmt.Errorf("connect: %w", err)}
		}
		return nil, ip, &stepError{spyder.StatusConnectError, err}
	}
	return nc, ip, nil
}

// reconnect opens a connection for a redirect hop or after the server
// closed the previous one: to the visited host's own addresses, or to a
// redirect target's, looked up and guarded like the visited host's.
func (p *visit) reconnect(ctx context.Context, scheme, host, port string, own []netip.Addr) (*httpConn, error) {
	addrs := own
	if host != string(p.host) {
		all, err := p.c.resolver.LookupAddrs(ctx, host)
		if err != nil {
			return nil, err
		}
		if addrs = p.c.dialable(all); len(addrs) == 0 {
			if len(all) == 0 {
				return nil, &stepError{spyder.StatusNoAddress, fmt.Errorf("%s: %w", host, errNoAddress)}
			}
			return nil, &stepError{spyder.StatusPrivateAddress, fmt.Errorf("%s: %w", host, errNoAddress)}
		}
	}
	return p.connect(ctx, scheme, host, port, addrs, nil)
}

package resolver

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// The DNS queries to one resolver go out over a few long-lived UDP
// sockets that every lookup shares, rather than a new socket per lookup:
// opening, connecting, polling and closing a socket for each host cost
// more system calls than its queries did. Each socket's reader hands an
// answer to the lookup that registered its ID; a lookup sends all its
// questions in one system call (sendmmsg on Linux).
//
// The price is in source-port randomisation, the defence against a
// forged answer from off the path: a forger must guess the query's 16-bit
// ID and its source port. A socket per lookup draws a fresh ephemeral port
// for every host; a shared socket keeps its port while it lives. So each
// socket is retired after socketQueries queries (and closed once its last
// lookup ends), and IDs are drawn at random and unique per socket: a
// forger who learnt a port has it for at most socketQueries queries,
// spread over socketsPerServer ports. An answer must also echo the
// question's name and type to count (see dnsQuestions.match).
const (
	socketsPerServer = 8
	socketQueries    = 1024
	// socketIdle is how long a socket without a lookup stays open, so
	// that a crawl that stops leaves no socket or goroutine behind.
	socketIdle = time.Second
	// readBatch is how many answers a reader takes in one system call.
	readBatch = 8
)

// dnsPacket is what a socket's reader hands a lookup: an answer from
// server u, or a network error of the socket (such as a closed port),
// which every query waiting on it shares.
type dnsPacket struct {
	u   int
	b   []byte
	err error
}

// socketPool is the UDP sockets to one server. It is safe for concurrent use.
type socketPool struct {
	server     string
	u          int // the server's index in resolver.ups
	maxQueries int // queries a socket sends before it is retired (socketQueries)
	next       atomic.Uint32
	mu         sync.Mutex
	slots      [socketsPerServer]*udpSocket
}

// udpSocket is one connected UDP socket and the lookups waiting on it.
type udpSocket struct {
	conn  *net.UDPConn
	batch interface {
		WriteBatch([]ipv4.Message, int) (int, error)
		ReadBatch([]ipv4.Message, int) (int, error)
	}
	pool *socketPool

	mu      sync.Mutex
	waiters map[uint16]chan<- dnsPacket // by query ID
	sent    int                         // IDs handed out
	retired bool                        // takes no new lookup; closes when the last ends
	closed  bool
}

// acquire returns a socket to the pool's server with n fresh query IDs
// registered, whose answers go to inbox (which must have room for every
// answer the lookup can get: the reader never waits). ctx bounds opening
// a socket.
func (p *socketPool) acquire(ctx context.Context, n int, inbox chan<- dnsPacket) (*udpSocket, []uint16, error) {
	k := p.next.Add(1) % socketsPerServer
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.slots[k]
	if s != nil {
		s.mu.Lock()
		if s.closed || s.retired {
			s.mu.Unlock()
			s = nil
		}
	}
	if s == nil {
		var err error
		if s, err = p.open(ctx); err != nil {
			return nil, nil, err
		}
		p.slots[k] = s
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	ids := make([]uint16, n)
	for i := range ids {
		id := uint16(rand.Uint32())
		for s.waiters[id] != nil {
			id = uint16(rand.Uint32())
		}
		s.waiters[id], ids[i] = inbox, id
	}
	if s.sent += n; s.sent >= p.maxQueries {
		s.retired = true
	}
	s.conn.SetReadDeadline(time.Time{})
	return s, ids, nil
}

func (p *socketPool) open(ctx context.Context) (*udpSocket, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", p.server)
	if err != nil {
		return nil, err
	}
	uc := c.(*net.UDPConn)
	s := &udpSocket{conn: uc, pool: p, waiters: map[uint16]chan<- dnsPacket{}}
	if a, ok := uc.RemoteAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		s.batch = ipv6.NewPacketConn(uc)
	} else {
		s.batch = ipv4.NewPacketConn(uc)
	}
	uc.SetReadBuffer(1 << 20) // best effort: a burst of answers waits here
	go s.read()
	return s, nil
}

// send writes the queries in one system call where the platform allows.
func (s *udpSocket) send(queries [][]byte) error {
	ms := make([]ipv4.Message, len(queries))
	bufs := make([][]byte, len(queries))
	for i, q := range queries {
		bufs[i] = q
		ms[i].Buffers = bufs[i : i+1]
	}
	for len(ms) > 0 {
		n, err := s.batch.WriteBatch(ms, 0)
		if err != nil {
			return err
		}
		ms = ms[n:]
	}
	return nil
}

// release ends a lookup's use of s: its IDs no longer receive answers. The
// last lookup on a retired socket closes it; on another, it starts the
// idle timer.
func (s *udpSocket) release(ids []uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.waiters, id)
	}
	if len(s.waiters) > 0 || s.closed {
		return
	}
	if s.retired {
		s.closed = true
		s.conn.Close()
		return
	}
	s.conn.SetReadDeadline(time.Now().Add(socketIdle))
}

// read hands each answer to the lookup waiting for its ID until the
// socket is closed, or has been idle for socketIdle.
func (s *udpSocket) read() {
	ms := make([]ipv4.Message, readBatch)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, udpSize)}
	}
	for {
		n, err := s.batch.ReadBatch(ms, 0)
		switch {
		case err == nil:
			for _, m := range ms[:n] {
				s.deliver(m.Buffers[0][:m.N])
			}
		case errors.Is(err, net.ErrClosed):
			return
		case isTimeout(err):
			if s.closeIdle() {
				return
			}
		case errors.Is(err, syscall.ECONNREFUSED):
			s.fail(err, false) // the port was closed to an earlier query
		default:
			s.fail(err, true)
			return
		}
	}
}

// deliver passes one answer to the lookup that registered its ID; a
// packet with no such lookup (late, stray or forged) is dropped.
func (s *udpSocket) deliver(b []byte) {
	if len(b) < 12 {
		return
	}
	s.mu.Lock()
	ch := s.waiters[binary.BigEndian.Uint16(b)]
	s.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- dnsPacket{u: s.pool.u, b: append([]byte(nil), b...)}:
	default: // a repeat the lookup has no room for
	}
}

// fail passes a network error of the socket to every lookup waiting on
// it, and closes the socket if it is of no more use.
func (s *udpSocket) fail(err error, closing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if closing {
		s.closed = true
		s.conn.Close()
	}
	seen := map[chan<- dnsPacket]bool{}
	for _, ch := range s.waiters {
		if !seen[ch] {
			seen[ch] = true
			select {
			case ch <- dnsPacket{u: s.pool.u, err: err}:
			default:
			}
		}
	}
}

// closeIdle closes s if no lookup waits on it; else it clears the deadline.
func (s *udpSocket) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) > 0 {
		s.conn.SetReadDeadline(time.Time{})
		return false
	}
	s.closed = true
	s.conn.Close()
	return true
}

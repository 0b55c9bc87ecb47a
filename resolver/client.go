package resolver

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/time/rate"
)

// Client sends DNS queries to one or more servers. Each lookup starts at
// the next server in turn, so lookups spread evenly over those in
// rotation; a server that leaves an attempt unanswered, or answers
// SERVFAIL or REFUSED, hands the questions to the next. It is safe for
// concurrent use.
type Client struct {
	ups      []*upstream
	pools    []*socketPool // the UDP sockets to each of ups
	next     atomic.Uint64 // rotation: where the next lookup starts
	tcp      *dns.Client
	timeout  time.Duration
	retries  int
	now      func() time.Time
	cooldown time.Duration
	rate     *rate.Limiter // queries per second to all servers; nil: no limit
}

// Defaults for the [Config] fields left zero.
const (
	DefaultTimeout = 2 * time.Second
	DefaultRetries = 2
)

// Config configures a [Client]. The zero value asks the system's resolver
// with the defaults above.
type Config struct {
	// Servers is the DNS server, or a comma-separated list of them, each
	// "host:port", a bare IP (port 53) or "[IPv6]:port" (see
	// [ParseServers]); "" means every nameserver of /etc/resolv.conf
	// ([SystemServer]).
	// Lookups are spread over the servers in turn; one that stops
	// answering is set aside for [Cooldown].
	Servers string
	// Timeout bounds each query attempt; 0 means DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a query that timed out is sent again; 0
	// means DefaultRetries, a negative value none.
	Retries int
	// Now is the clock that decides when a server set aside is tried
	// again; nil means time.Now.
	Now func() time.Time
	// Rate bounds the queries sent to all servers together, per second;
	// 0 means no bound. Bursts reach Rate (at least 1): over any second
	// or more, no more than Rate a second and one burst go out.
	Rate float64
}

// New returns a Client for cfg. Its only errors are a Servers list that
// does not parse, and no server given with none found in /etc/resolv.conf.
func New(cfg Config) (*Client, error) {
	if cfg.Servers == "" {
		s, err := SystemServer()
		if err != nil {
			return nil, err
		}
		cfg.Servers = s
	}
	servers, err := ParseServers(cfg.Servers)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Client{
		tcp:      &dns.Client{Net: "tcp", Timeout: cfg.Timeout},
		timeout:  cfg.Timeout,
		retries:  cfg.Retries,
		now:      cfg.Now,
		cooldown: Cooldown,
	}
	if cfg.Rate > 0 {
		burst := max(int(math.Ceil(cfg.Rate)), 1)
		r.rate = rate.NewLimiter(rate.Limit(cfg.Rate), burst)
	}
	for i, s := range servers {
		r.ups = append(r.ups, &upstream{server: s})
		r.pools = append(r.pools, &socketPool{server: s, u: i, maxQueries: socketQueries})
	}
	return r, nil
}

// awaitRate waits until n more queries may go out under Config.Rate. Its
// error is ctx's, or, when the wait would outlast ctx's deadline, the
// limiter's wrapped as a context.DeadlineExceeded: the lookup ran out of
// time, as the crawler's HTTP side says of the same refusal.
func (r *Client) awaitRate(ctx context.Context, n int) error {
	if r.rate == nil {
		return nil
	}
	for range n {
		if err := r.rate.Wait(ctx); err != nil {
			if ctx.Err() == nil {
				return fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
			}
			return err
		}
	}
	return nil
}

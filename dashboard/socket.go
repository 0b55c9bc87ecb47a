package dashboard

// The control socket lets `spyder queue` commands reach a standalone crawl
// while it runs. bbolt locks its file to one process, so while `spyder run`
// holds it nobody else can open it; instead the run serves the dashboard's
// API on a unix socket beside the file (<db>.sock), and the commands ask it
// there through a [Client]. The socket is removed when the run ends; one
// left by a process that was killed answers nothing, so a client takes it
// as absent and the next run replaces it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// SocketPath returns the control socket of the bbolt file db.
func SocketPath(db string) string { return db + ".sock" }

// ServeSocket serves h on a unix socket at path until stop is called, which
// also removes the socket. A socket file there that nothing answers on
// (left by a killed process) is replaced; one that answers is an error, as
// is a path too long for a socket (the caller may run without it).
func ServeSocket(path string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	if _, err := os.Lstat(path); err == nil {
		if answers(path) {
			return nil, fmt.Errorf("control socket %s: another process answers on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control socket %s: remove the stale one: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	os.Chmod(path, 0o600) // the queue's owner only, as the file itself
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control_socket", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx) // closes the listener, which removes the socket file
		os.Remove(path)
	}, nil
}

// answers reports whether something accepts connections on the socket.
func answers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Client asks a running crawl about its queue over its control socket.
type Client struct {
	path string
	hc   *http.Client
}

// DialSocket returns a client of the control socket at path, and false when no
// process answers there (no socket, or a stale one).
func DialSocket(path string) (*Client, bool) {
	if !answers(path) {
		return nil, false
	}
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
	return &Client{path: path, hc: hc}, true
}

// Path returns the socket's path.
func (c *Client) Path() string { return c.path }

// Status returns the running crawl's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, "/api/status", &st)
	return st, err
}

// Dead returns up to limit dead items, oldest first (limit <= 0: all).
func (c *Client) Dead(ctx context.Context, limit int) ([]Dead, error) {
	var items []Dead
	err := c.do(ctx, http.MethodGet, "/api/dead?limit="+strconv.Itoa(limit), &items)
	return items, err
}

// RetryDead moves up to limit dead items back to pending (limit <= 0:
// all) and returns how many moved.
func (c *Client) RetryDead(ctx context.Context, limit int) (int, error) {
	var res struct {
		Retried int `json:"retried"`
	}
	err := c.do(ctx, http.MethodPost, "/api/dead/retry?limit="+strconv.Itoa(limit), &res)
	return res.Retried, err
}

// do sends one request and decodes its JSON answer into v; an answer that
// is not 200 is an error carrying its text.
func (c *Client) do(ctx context.Context, method, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://spyder"+path, strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("control socket %s: %w", c.path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("control socket %s: %s", c.path, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("control socket %s: %w", c.path, err)
	}
	return nil
}

// Package client is the Go client of the vfsd daemon's HTTP/JSON API (see
// docs/api.md): one method per endpoint, over the daemon's Unix socket or
// over TCP with a bearer token. API failures are *api.Error values carrying
// the stable code (match them with errors.Is(err, &api.Error{Code: ...}) or
// client.Code); a daemon that cannot be reached is an *UnreachableError.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
)

// Options say how to reach the daemon: Socket, or Addr (with Token).
type Options struct {
	// Socket is the daemon's Unix socket path.
	Socket string
	// Addr is the daemon's TCP address, host:port or an http(s):// URL;
	// used when Socket is empty.
	Addr string
	// Token is the bearer token sent with every request: the admin token,
	// or a session's token. Requests on the socket need none.
	Token string
	// HTTPClient, if set, is used as is (its transport must reach the
	// daemon); Socket and Addr then only name the base URL.
	HTTPClient *http.Client
}

// Client talks to one daemon. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	where string // for error messages
}

// New returns a client for the daemon opts names. It does not connect.
func New(opts Options) (*Client, error) {
	c := &Client{token: opts.Token, hc: opts.HTTPClient}
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	switch {
	case opts.Socket != "":
		c.base, c.where = "http://vfsd", "the socket "+opts.Socket
		dialer := &net.Dialer{Timeout: 5 * time.Second}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", opts.Socket)
		}
	case opts.Addr != "":
		c.base = opts.Addr
		if !strings.Contains(c.base, "://") {
			c.base = "http://" + c.base
		}
		c.base = strings.TrimSuffix(c.base, "/")
		if _, err := url.Parse(c.base); err != nil {
			return nil, fmt.Errorf("client: address %q: %w", opts.Addr, err)
		}
		c.where = c.base
	default:
		return nil, errors.New("client: give the daemon's socket or TCP address")
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: tr}
	}
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// UnreachableError means the daemon could not be reached at all.
type UnreachableError struct {
	Where string
	Err   error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach vfsd at %s: %v (is the daemon running? start it with vfsd serve)", e.Where, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Code returns the API error code of err ("" when err is not an API error).
func Code(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// request is one API call.
type request struct {
	method, path string
	query        url.Values
	body         io.Reader
	contentType  string
}

// jsonBody encodes v as a request body.
func jsonBody(v any) (io.Reader, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("client: encode the request: %w", err)
	}
	return bytes.NewReader(b), nil
}

// send makes the request and returns the response when its status is 2xx;
// otherwise the API error it carries.
func (c *Client) send(ctx context.Context, rq request) (*http.Response, error) {
	u := c.base + rq.path
	if len(rq.query) > 0 {
		u += "?" + rq.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, rq.body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if rq.body != nil {
		ct := rq.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", rq.method, rq.path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the dial error, without the method and URL
		}
		return nil, &UnreachableError{Where: c.where, Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body api.ErrorBody
	if json.Unmarshal(b, &body) != nil || body.Error == nil {
		return nil, &api.Error{Code: api.CodeInternal, Status: resp.StatusCode,
			Message: fmt.Sprintf("%s %s: HTTP %d: %s", rq.method, rq.path, resp.StatusCode, strings.TrimSpace(string(b)))}
	}
	body.Error.Status = resp.StatusCode
	return nil, body.Error
}

// do makes a JSON call: in is the body (nil for none), out receives the
// response (nil to discard it).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	body, err := jsonBody(in)
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, request{method: method, path: path, query: query, body: body})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return decodeJSON(resp, out)
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

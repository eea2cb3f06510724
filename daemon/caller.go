package daemon

import "context"

// Caller is whom a call acts for: the admin, or one session (a session's
// token reaches that session only). The HTTP API works it out from the
// request (package httpapi) and attaches it with WithCaller; a call
// without one is the admin's (the daemon's own, in-process).
//
// The daemon's methods trust that the caller may reach the session they
// name — the API's route table checks each route's scope — and use the
// Caller where the answer depends on who asks: which snapshots a session
// token resolves, which blobs it reads, what a fork by a session may ask.
type Caller struct {
	// Admin is set for the admin: everything is reachable.
	Admin bool
	// Session is the session a session token acts for ("" for the admin).
	Session string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, &c)
}

// CallerFrom returns the caller ctx carries, and whether it carries one.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(*Caller)
	if !ok {
		return Caller{}, false
	}
	return *c, true
}

// callerOf returns ctx's caller: the admin when it carries none.
func callerOf(ctx context.Context) Caller {
	if c, ok := CallerFrom(ctx); ok {
		return c
	}
	return Caller{Admin: true}
}

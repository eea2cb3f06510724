package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/snapshot"
)

// CheckName refuses a volume name that cannot be a session ID: a volume's
// session is named after it.
func CheckName(name string) error {
	if !snapshot.ValidSessionID(name) {
		return fmt.Errorf("volume name %q: vfsd volumes are named like sessions: 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Create creates the session of volume name as o says, through d's typed
// methods as the admin: staged from o.Folder (the daemon's allow-roots
// apply), forked from o.Fork — a live session when one has that ID, else a
// snapshot ID or unique prefix — or empty. label is the session's label.
// Errors are the daemon's (*api.Error), those about o.Fork an
// *OptionError; a failed creation leaves no session behind (the daemon's
// guarantee).
func Create(ctx context.Context, d *daemon.Daemon, name, label string, o *Options) (*api.CreateSessionResponse, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	req := o.SessionRequest(name)
	req.Label = label
	if o.Fork == "" {
		return d.CreateSession(ctx, req, nil)
	}
	if _, err := d.Session(ctx, o.Fork); err == nil {
		return d.ForkSession(ctx, o.Fork, req)
	} else if !isNotFound(err) {
		return nil, err
	}
	resp, err := d.ForkSnapshot(ctx, o.Fork, req)
	if err != nil && isNotFound(err) {
		var ae *api.Error
		msg := err.Error()
		if errors.As(err, &ae) {
			msg = ae.Message
		}
		return nil, &OptionError{Option: OptFork, Value: o.Fork, Msg: fmt.Sprintf("no session has that ID and no snapshot matches it (%s); want %s", msg, whatOf(OptFork))}
	}
	return resp, err
}

// isNotFound reports whether err is the daemon's not_found.
func isNotFound(err error) bool {
	return errors.Is(err, &api.Error{Code: api.CodeNotFound})
}

// whatOf returns what option key accepts.
func whatOf(key string) string {
	for _, a := range accepted {
		if a.key == key {
			return a.what
		}
	}
	return ""
}

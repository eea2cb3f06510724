package api

import "time"

// SessionOwner is a session's ownership in the fleet as its daemon knows
// it (Session.Owner): see docs/fleets.md.
type SessionOwner struct {
	Daemon string `json:"daemon"` // the owner: this daemon, unless fenced
	Epoch  uint64 `json:"epoch"`
	// Expires is the lease's end as last written ("" before the session
	// was claimed: the remote was unreachable at its creation).
	Expires *time.Time `json:"expires,omitempty"`
	Head    string     `json:"head,omitempty"` // the latest snapshot pushed as its head
	// Fenced says another daemon (Daemon, at Epoch) owns the session now:
	// its tools answer code fenced here.
	Fenced bool `json:"fenced,omitempty"`
	// Moving names the daemon a hand-off in progress gives it to.
	Moving string `json:"moving,omitempty"`
	// KeepRef is the ref that follows the session's head.
	KeepRef string `json:"keep_ref,omitempty"`
}

// MoveRequest is the body of POST /v1/sessions/{id}/move.
type MoveRequest struct {
	To string `json:"to"` // the receiving daemon's fleet name (vfsd daemon list)
}

// MoveReport answers POST /v1/sessions/{id}/move: the session now belongs
// to To, at Epoch, from Snapshot; this daemon's copy is fenced.
type MoveReport struct {
	Session  string      `json:"session"`
	From     string      `json:"from"`
	To       string      `json:"to"`
	Epoch    uint64      `json:"epoch"`
	Snapshot string      `json:"snapshot"`
	Push     *PushReport `json:"push,omitempty"`
	// Ms are the steps' durations: freeze, snapshot, push, handoff.
	Ms map[string]float64 `json:"ms"`
}

// Ref is a named pointer to a snapshot, shared by the fleet.
type Ref struct {
	Name     string    `json:"name"`
	Snapshot string    `json:"snapshot"`
	Seq      uint64    `json:"seq"` // how often it moved
	Updated  time.Time `json:"updated"`
	By       string    `json:"by"`                // the daemon that moved it last
	History  []string  `json:"history,omitempty"` // its previous snapshots, newest first
}

// RefRequest is the body of PUT /v1/refs/{name}.
type RefRequest struct {
	// Snapshot is a snapshot ID or a unique prefix (local or in the
	// fleet); a local snapshot is pushed first.
	Snapshot string `json:"snapshot"`
	// Expect, when set, makes the move conditional: only while the ref
	// points at this snapshot ID ("" — with ExpectSet — for a ref that
	// must not exist yet); else conflict.
	Expect    string `json:"expect,omitempty"`
	ExpectSet bool   `json:"expect_set,omitempty"`
}

// RefList answers GET /v1/refs.
type RefList struct {
	Refs []Ref `json:"refs"`
	More bool  `json:"more,omitempty"` // more than the listing bound
}

// Daemon is a member of the fleet (GET /v1/daemons).
type Daemon struct {
	Name      string    `json:"name"`
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	Alive     bool      `json:"alive"` // heartbeat within three intervals
	Self      bool      `json:"self,omitempty"`
	Version   string    `json:"version,omitempty"`
	Sessions  int       `json:"sessions"` // sessions it owns
}

// DaemonList answers GET /v1/daemons.
type DaemonList struct {
	Self    string   `json:"self"`
	Daemons []Daemon `json:"daemons"`
}

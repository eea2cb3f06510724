package aos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// Determinism and replay (both documents, §"Determinism and Replay"):
//
//  1. "External filesystem/process actions are never replayed." In replay
//     mode (WithReplay) a call runs nothing: it returns the receipt the
//     journal holds for it.
//  2. "Replay consumes journaled receipts/events exactly as with other
//     effects." Every call outside replay appends its receipt to the
//     journal; in replay the n-th call with an intent consumes the n-th
//     receipt journaled for that intent in the session.
//  3. "Large receipt payloads should use CAS refs so replay dependencies
//     remain explicit." Payloads over the inline limit are blobs; each
//     entry lists the blob refs its receipt depends on.
//  4. "Missing CAS dependency during replay is deterministic hard fault."
//     A replayed receipt whose blob is gone, or a call with no journaled
//     receipt, is status error with error_code replay_missing_cas /
//     replay_receipt_missing, never a fresh run.

// Entry is one journaled call.
type Entry struct {
	// Effect is the canonical effect name (host.fs.* or process.fs.*; the
	// SDK tool names journal as host.fs.*).
	Effect string `json:"effect"`
	// Intent is IntentHash(Effect, params).
	Intent string `json:"intent"`
	// Params are the call's parameters as given.
	Params json.RawMessage `json:"params"`
	// Receipt is the receipt body; Status its status; Text its rendering.
	Receipt json.RawMessage `json:"receipt"`
	Status  string          `json:"status"`
	Text    string          `json:"text"`
	// BlobRefs are the CAS refs the receipt depends on.
	BlobRefs []string `json:"blob_refs,omitempty"`
}

// Journal stores a session's receipts for replay. The daemon's per-session
// call log implements it to make replay durable (see WithJournal); the
// contract's own is a bounded in-memory map (NewMemJournal).
type Journal interface {
	// Append records a call's receipt in the session's journal, in call
	// order.
	Append(ctx context.Context, sessionID string, e Entry) error
	// Lookup returns the n-th (0-based) entry of the session whose Intent
	// is intent, in call order.
	Lookup(ctx context.Context, sessionID, intent string, n int) (Entry, bool, error)
}

// IntentHash identifies a call for replay: the SHA-256 (hex) of the
// effect name and the parameters in canonical JSON (object keys sorted,
// no insignificant space). Parameters that do not parse hash as given.
func IntentHash(effect string, params json.RawMessage) string {
	canon := []byte(params)
	var v any
	if err := json.Unmarshal(params, &v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	h := sha256.New()
	h.Write([]byte(effect))
	h.Write([]byte{0})
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

type ctxKey int

const (
	journalKey ctxKey = iota
	replayKey
)

// WithJournal makes calls under ctx journal to j (and replay from it)
// instead of the contract's in-memory journal: the daemon passes its
// durable per-session call log this way.
func WithJournal(ctx context.Context, j Journal) context.Context {
	return context.WithValue(ctx, journalKey, j)
}

// Replay is one replay run: it counts the calls of each intent so that the
// n-th call consumes the n-th journaled receipt.
type Replay struct {
	mu   sync.Mutex
	seen map[string]int
}

// WithReplay puts calls under ctx in replay mode: each returns its
// journaled receipt and runs nothing. Use one Replay per replay run of a
// session.
func WithReplay(ctx context.Context) (context.Context, *Replay) {
	r := &Replay{seen: map[string]int{}}
	return context.WithValue(ctx, replayKey, r), r
}

func (r *Replay) next(intent string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.seen[intent]
	r.seen[intent] = n + 1
	return n
}

func replayOf(ctx context.Context) *Replay {
	r, _ := ctx.Value(replayKey).(*Replay)
	return r
}

// MemJournal is an in-memory Journal bounded to maxSessions sessions of
// at most perSession entries each: the oldest entries of a session, and
// the least recently appended-to sessions, are dropped first.
type MemJournal struct {
	mu          sync.Mutex
	maxSessions int
	perSession  int
	sessions    map[string][]Entry
	order       []string // sessions, least recently appended-to first
}

// NewMemJournal returns an empty bounded journal.
func NewMemJournal(maxSessions, perSession int) *MemJournal {
	return &MemJournal{maxSessions: max(maxSessions, 1), perSession: max(perSession, 1), sessions: map[string][]Entry{}}
}

// Append implements Journal.
func (m *MemJournal) Append(_ context.Context, sessionID string, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, s := range m.order {
		if s == sessionID {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	m.order = append(m.order, sessionID)
	es := append(m.sessions[sessionID], e)
	if len(es) > m.perSession {
		es = es[len(es)-m.perSession:]
	}
	m.sessions[sessionID] = es
	for len(m.order) > m.maxSessions {
		delete(m.sessions, m.order[0])
		m.order = m.order[1:]
	}
	return nil
}

// Lookup implements Journal.
func (m *MemJournal) Lookup(_ context.Context, sessionID, intent string, n int) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.sessions[sessionID] {
		if e.Intent != intent {
			continue
		}
		if n == 0 {
			return e, true, nil
		}
		n--
	}
	return Entry{}, false, nil
}

// Entries returns a copy of the session's journal, oldest first.
func (m *MemJournal) Entries(sessionID string) []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Entry(nil), m.sessions[sessionID]...)
}

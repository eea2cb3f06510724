package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vfsd/vfsd/internal/atomicfile"

	"github.com/vfsd/vfsd/api"
)

// Token prefixes: they tell admin and session tokens apart in logs and
// configuration, and are part of the token.
const (
	adminTokenPrefix   = "vfsd_admin_"
	sessionTokenPrefix = "vfsd_sess_"
)

// newToken returns prefix followed by 32 random bytes, base64url.
func newToken(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("daemon: no randomness for a token: %v", err))
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenHash is how the daemon keeps a session token.
func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// loadAdminToken returns the admin token: the one configured, or the one in
// the token file, or — when TCP is on and there is none — a new one written
// to the token file with mode 0600. "" means there is no admin token (and
// no TCP).
func loadAdminToken(cfg Config) (string, error) {
	if cfg.Token != "" {
		return strings.TrimSpace(cfg.Token), nil
	}
	b, err := os.ReadFile(cfg.TokenFile)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("admin token file %s is empty; remove it to have a new token generated", cfg.TokenFile)
		}
		return tok, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("admin token: %w", err)
	case cfg.Listen == "":
		return "", nil
	}
	tok := newToken(adminTokenPrefix)
	if err := os.MkdirAll(filepath.Dir(cfg.TokenFile), 0o700); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if err := atomicfile.WriteFile(cfg.TokenFile, []byte(tok+"\n"), 0o600, ""); err != nil {
		return "", fmt.Errorf("admin token: write %s: %w", cfg.TokenFile, err)
	}
	return tok, nil
}

// Authenticate returns whom a bearer token belongs to: the admin, or the
// open session whose token it is.
func (d *Daemon) Authenticate(tok string) (Caller, bool) {
	if d.adminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(d.adminToken)) == 1 {
		return Caller{Admin: true}, true
	}
	if !strings.HasPrefix(tok, sessionTokenPrefix) {
		return Caller{}, false
	}
	d.mu.RLock()
	id, ok := d.tokens[tokenHash(tok)]
	d.mu.RUnlock()
	if !ok {
		return Caller{}, false
	}
	return Caller{Session: id}, true
}

// SessionBinding is what a credential made for a session (a review-page
// login) is bound to: the session's token, by its hash, and the session's
// incarnation. The credential lives while the token does.
type SessionBinding struct {
	// TokenHash is the SHA-256 of the session's token, in hex.
	TokenHash string
	// UID names this incarnation of the session (IDs are reused).
	UID string
}

// Bind returns session id's binding.
func (d *Daemon) Bind(id string) (SessionBinding, error) {
	e, err := d.lookup(id)
	if err != nil {
		return SessionBinding{}, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	for h, s := range d.tokens {
		if s == id {
			return SessionBinding{TokenHash: h, UID: e.uid}, nil
		}
	}
	return SessionBinding{}, apiErr(api.CodeNotFound, "session %s has no token to bind a review login to", id)
}

// Bound reports whether session id's token is still the one whose hash is
// tokenHash: a credential bound to it is still good.
func (d *Daemon) Bound(id, tokenHash string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tokens[tokenHash] == id
}

// HashToken is how the daemon keeps a token (and a review page's codes
// and cookies): SHA-256, in hex.
func HashToken(token string) string { return tokenHash(token) }

// NewSecret returns a fresh random secret with prefix (tokens, one-time
// codes, cookies): 32 random bytes, base64url.
func NewSecret(prefix string) string { return newToken(prefix) }

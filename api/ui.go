package api

import "time"

// UILoginRequest is the body of POST /v1/ui/login.
type UILoginRequest struct {
	// Session, for the admin, makes a login that reaches only this session
	// (a reviewer's); "" is an admin login. A session token's login always
	// reaches its own session only (Session may name it, no other).
	Session string `json:"session,omitempty"`
}

// UILoginResponse answers POST /v1/ui/login: a one-time login for the
// review page.
type UILoginResponse struct {
	// Path is the login's path, /ui/login?code=...: open it once, before
	// ExpiresAt, at http://Host:PORT, PORT being the daemon's TCP port (or
	// that of `vfsd ui`'s loopback proxy). It sets the page's cookie and
	// goes to /ui/.
	Path string `json:"path"`
	// Host is the page's host name for this login, vfsd-<16 hex>.localhost:
	// the page works only there (browsers resolve *.localhost to loopback,
	// and send the page's cookie to no other host). It differs per
	// principal: the admin's is not shown to session tokens.
	Host string `json:"host"`
	// URL is Path at Host on the daemon's TCP port, when it has one (""
	// when it listens only on its socket: then `vfsd ui` serves the page).
	URL string `json:"url,omitempty"`
	// ExpiresAt is when the code stops working if unused.
	ExpiresAt time.Time `json:"expires_at"`
	// Session is the session the login reaches ("" for the admin).
	Session string `json:"session,omitempty"`
}

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
	// Path is the login's path, /ui/login?code=...: open it on the
	// daemon's TCP address (or through `vfsd ui`'s loopback proxy) once,
	// before ExpiresAt. It sets the page's cookie and goes to /ui/.
	Path string `json:"path"`
	// URL is Path on the daemon's TCP listener, when it has one ("" when
	// it listens only on its socket: then `vfsd ui` serves the page).
	URL string `json:"url,omitempty"`
	// ExpiresAt is when the code stops working if unused.
	ExpiresAt time.Time `json:"expires_at"`
	// Session is the session the login reaches ("" for the admin).
	Session string `json:"session,omitempty"`
}

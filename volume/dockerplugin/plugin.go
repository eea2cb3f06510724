// Package dockerplugin serves vfsd sessions as Docker (and Podman) volumes:
// the Docker volume plugin protocol (/Plugin.Activate,
// /VolumeDriver.Create|Remove|Mount|Unmount|Path|Get|List|Capabilities;
// JSON over HTTP on a Unix socket, by default /run/docker/plugins/vfsd.sock,
// which makes the driver's name "vfsd") in the daemon's process, calling
// its typed methods as the admin.
//
// # Volumes are sessions
//
// Volume NAME is session NAME: `docker volume create -d vfsd ws1` creates
// session ws1 (package volume parses the options), and `vfsd session show
// ws1`, its tools, diff, snapshots, log and review page see what containers
// do in it. The mapping needs no table: the session ID is the volume name,
// and the daemon keeps sessions across restarts. What the session does not
// hold is kept in a record per volume, STATE/volumes/NAME.json, written
// atomically: the options it was created with (they say how it is mounted:
// backend, read-only, uid/gid), the UID of the session's incarnation, and
// the Docker mount IDs that hold its mount. A session is a volume only
// while a record names its incarnation: sessions made otherwise are not
// listed (so `docker volume prune` cannot close them), and a volume whose
// session was closed behind Docker's back (vfsd session close) is gone.
//
// # Mounts
//
// The first /VolumeDriver.Mount mounts the session at STATE/mnt/NAME
// (daemon.Mount: nosuid, nodev, FUSE with allow_other and the kernel's
// permission checks, or the kernel overlay with backend=overlay); later
// ones with other mount IDs share that mount, and the last /Unmount
// unmounts it. The daemon mounts sessions again when it restarts, and the
// record keeps the mount IDs, so a restarted daemon keeps counting where
// the last one stopped. /VolumeDriver.Remove unmounts and closes the
// session (its snapshots stay, unless its contract purges them).
package dockerplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/internal/atomicfile"
	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/internal/unixsock"
	"github.com/vfsd/vfsd/volume"
)

// DefaultSocket is where Docker looks for a plugin named vfsd.
const DefaultSocket = "/run/docker/plugins/vfsd.sock"

// contentType is the media type of the protocol's bodies.
const contentType = "application/vnd.docker.plugins.v1+json"

// maxBody bounds a request's body: names and options are short.
const maxBody = 1 << 20

// Config configures a Plugin.
type Config struct {
	// Socket is the Unix socket to serve on (mode 0600); DefaultSocket when
	// empty. Its base name less ".sock" is the driver's name in Docker.
	Socket string
	// StateDir holds the volumes' records and mount points; required.
	// `vfsd serve` uses DATA_DIR/docker-plugin.
	StateDir string
	// Logger receives the plugin's log; the daemon's when nil.
	Logger *slog.Logger
}

// Plugin serves the Docker volume plugin protocol over a daemon.
type Plugin struct {
	d       *daemon.Daemon
	cfg     Config
	log     *slog.Logger
	handler http.Handler
	ready   chan struct{}

	mu    sync.Mutex
	locks map[string]*nameLock // per volume name: one call at a time
}

// nameLock is a volume's lock and how many calls hold or wait for it.
type nameLock struct {
	sync.Mutex
	users int
}

// New returns a plugin over d, not serving yet (Serve does). It creates the
// state directory and drops the records of volumes whose session is gone.
func New(d *daemon.Daemon, cfg Config) (*Plugin, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("docker plugin: a state directory is required")
	}
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.Logger == nil {
		cfg.Logger = d.Logger()
	}
	p := &Plugin{d: d, cfg: cfg, log: cfg.Logger.With("component", "docker-plugin"), ready: make(chan struct{}),
		locks: make(map[string]*nameLock)}
	for _, dir := range []string{cfg.StateDir, p.recordDir(), p.mountRoot()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("docker plugin: state directory: %w", err)
		}
	}
	p.dropStale()
	mux := http.NewServeMux()
	for path, h := range map[string]func(*http.Request) (any, error){
		"/Plugin.Activate":           p.activate,
		"/VolumeDriver.Create":       p.create,
		"/VolumeDriver.Remove":       p.remove,
		"/VolumeDriver.Mount":        p.mount,
		"/VolumeDriver.Unmount":      p.unmount,
		"/VolumeDriver.Path":         p.path,
		"/VolumeDriver.Get":          p.get,
		"/VolumeDriver.List":         p.list,
		"/VolumeDriver.Capabilities": p.capabilities,
	} {
		mux.Handle("POST "+path, p.serve(path, h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errResponse{Err: fmt.Sprintf("%s %s is not part of the volume plugin protocol", r.Method, r.URL.Path)})
	})
	p.handler = mux
	return p, nil
}

// Handler is the protocol's HTTP handler (Serve serves it).
func (p *Plugin) Handler() http.Handler { return p.handler }

// Ready is closed once Serve listens.
func (p *Plugin) Ready() <-chan struct{} { return p.ready }

// Socket is the socket Serve listens on.
func (p *Plugin) Socket() string { return p.cfg.Socket }

// Serve serves the protocol on the socket until ctx ends, then stops
// (calls in flight get a few seconds to finish) and removes the socket.
// The volumes' mounts stay: they are the daemon's.
func (p *Plugin) Serve(ctx context.Context) error {
	ln, err := unixsock.Listen(p.cfg.Socket, "--docker-plugin socket")
	if err != nil {
		return fmt.Errorf("docker plugin: %w", err)
	}
	defer os.Remove(p.cfg.Socket)
	srv := &http.Server{Handler: p.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	p.log.Info("docker volume plugin serving", "socket", p.cfg.Socket, "driver", strings.TrimSuffix(filepath.Base(p.cfg.Socket), ".sock"))
	close(p.ready)
	select {
	case err := <-errc:
		return fmt.Errorf("docker plugin: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// errResponse is every answer that is only an error (or none).
type errResponse struct {
	Err string `json:"Err"`
}

// serve decodes nothing itself: it bounds the body, runs h, and writes its
// answer, or {"Err": ...} with status 500. (Docker reads Err whatever the
// status; Podman takes only a status other than 200 for a failure, so a
// 200 with Err would make a refused create succeed there.)
func (p *Plugin) serve(path string, h func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		start := time.Now()
		out, err := h(r)
		if err != nil {
			p.log.Info("docker plugin call failed", "call", path, "err", err, "ms", time.Since(start).Milliseconds())
			writeJSON(w, http.StatusInternalServerError, errResponse{Err: message(err)})
			return
		}
		p.log.Debug("docker plugin call", "call", path, "ms", time.Since(start).Milliseconds())
		writeJSON(w, http.StatusOK, out)
	})
}

// message is the text Docker shows for err: an API error's message
// without its code, anything else as it is.
func message(err error) string {
	if ae, ok := err.(*api.Error); ok && ae.Message != "" {
		return ae.Message
	}
	return err.Error()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// request is the body of the volume calls: each uses some of the fields.
type request struct {
	Name string            `json:"Name"`
	Opts map[string]string `json:"Opts"`
	ID   string            `json:"ID"`
}

// decode reads a call's body; an empty one (List, Capabilities) is fine.
func decode(r *http.Request) (request, error) {
	var req request
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		return req, fmt.Errorf("the request body is not the protocol's JSON: %w", err)
	}
	return req, nil
}

// lock takes volume name's lock; the returned function releases it.
func (p *Plugin) lock(name string) func() {
	p.mu.Lock()
	l := p.locks[name]
	if l == nil {
		l = &nameLock{}
		p.locks[name] = l
	}
	l.users++
	p.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		p.mu.Lock()
		if l.users--; l.users == 0 {
			delete(p.locks, name)
		}
		p.mu.Unlock()
	}
}

func (p *Plugin) activate(*http.Request) (any, error) {
	return struct {
		Implements []string `json:"Implements"`
	}{[]string{"VolumeDriver"}}, nil
}

func (p *Plugin) capabilities(*http.Request) (any, error) {
	type caps struct {
		Scope string `json:"Scope"`
	}
	return struct {
		Capabilities caps `json:"Capabilities"`
	}{caps{Scope: "local"}}, nil
}

// create creates volume Name's session from Opts. Bad options, a name
// that cannot be a session's, or one a session already has fail before
// anything is made; a failure after leaves nothing behind either.
func (p *Plugin) create(r *http.Request) (any, error) {
	req, err := decode(r)
	if err != nil {
		return nil, err
	}
	if err := volume.CheckName(req.Name); err != nil {
		return nil, err
	}
	o, err := volume.Parse(req.Opts)
	if err != nil {
		return nil, err
	}
	defer p.lock(req.Name)()
	ctx := r.Context()
	if _, _, err := p.volume(ctx, req.Name); err == nil {
		return nil, fmt.Errorf("volume %s exists; remove it first (docker volume rm %s)", req.Name, req.Name)
	}
	if _, err := p.d.Session(ctx, req.Name); err == nil {
		return nil, fmt.Errorf("vfsd has a session named %s that is not a Docker volume; choose another name, or make the volume a copy of it with -o fork=%s", req.Name, req.Name)
	}
	resp, err := volume.Create(ctx, p.d, req.Name, "docker volume "+req.Name, o)
	if err != nil {
		return nil, errors.New(message(err)) // Docker and Podman name the volume
	}
	rec := &record{Name: req.Name, SessionUID: resp.Session.UID, Options: req.Opts, Created: time.Now().UTC()}
	if err := p.save(rec); err != nil {
		purge := true
		return nil, errors.Join(err, p.d.CloseSession(context.WithoutCancel(ctx), req.Name, &purge))
	}
	p.log.Info("docker volume created", "volume", req.Name, "base", resp.Session.Base, "fork_of", resp.Session.ForkOf)
	return errResponse{}, nil
}

// remove unmounts volume Name and closes its session.
func (p *Plugin) remove(r *http.Request) (any, error) {
	req, err := decode(r)
	if err != nil {
		return nil, err
	}
	defer p.lock(req.Name)()
	ctx := r.Context()
	rec, _, err := p.volume(ctx, req.Name)
	var gone *goneError
	switch {
	case errors.As(err, &gone):
		// Closed behind Docker's back: forget the record, and Docker the volume.
	case err != nil:
		return nil, err
	default:
		if err := p.d.CloseSession(ctx, req.Name, nil); err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("remove volume %s: close its session: %s", req.Name, message(err))
		}
	}
	if err := p.drop(rec.Name); err != nil {
		return nil, err
	}
	p.log.Info("docker volume removed", "volume", req.Name)
	return errResponse{}, nil
}

// mountResponse answers Mount and Path.
type mountResponse struct {
	Mountpoint string `json:"Mountpoint"`
	Err        string `json:"Err"`
}

// mount mounts volume Name for mount ID (once for every ID).
func (p *Plugin) mount(r *http.Request) (any, error) {
	req, err := decode(r)
	if err != nil {
		return nil, err
	}
	defer p.lock(req.Name)()
	ctx := r.Context()
	rec, sess, err := p.volume(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	o, err := volume.Parse(rec.Options)
	if err != nil {
		return nil, fmt.Errorf("volume %s: its record's options: %w", req.Name, err)
	}
	dir := p.mountDir(req.Name)
	mountedNow := false
	if !mountedAt(sess, dir) {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("volume %s: mount point: %w", req.Name, err)
		}
		if _, err := p.d.Mount(ctx, req.Name, o.MountRequest(dir)); err != nil {
			return nil, fmt.Errorf("mount volume %s: %s", req.Name, message(err))
		}
		mountedNow = true
	}
	if !slices.Contains(rec.MountIDs, req.ID) {
		rec.MountIDs = append(rec.MountIDs, req.ID)
		if err := p.save(rec); err != nil {
			if mountedNow {
				err = errors.Join(err, p.d.Unmount(context.WithoutCancel(ctx), req.Name, dir))
			}
			return nil, err
		}
	}
	p.log.Info("docker volume mounted", "volume", req.Name, "id", req.ID, "dir", dir, "mounts", len(rec.MountIDs), "new", mountedNow)
	return mountResponse{Mountpoint: dir}, nil
}

// unmount releases mount ID of volume Name; the last one unmounts it.
func (p *Plugin) unmount(r *http.Request) (any, error) {
	req, err := decode(r)
	if err != nil {
		return nil, err
	}
	defer p.lock(req.Name)()
	ctx := r.Context()
	rec, sess, err := p.volume(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(rec.MountIDs, req.ID) {
		return errResponse{}, nil // released already: unmounting is idempotent
	}
	rest := slices.DeleteFunc(slices.Clone(rec.MountIDs), func(id string) bool { return id == req.ID })
	dir := p.mountDir(req.Name)
	if len(rest) == 0 && mountedAt(sess, dir) {
		if err := p.d.Unmount(ctx, req.Name, dir); err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("unmount volume %s: %s", req.Name, message(err))
		}
	}
	rec.MountIDs = rest
	if err := p.save(rec); err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		_ = os.Remove(dir) // empty once unmounted; Mount makes it again
	}
	p.log.Info("docker volume released", "volume", req.Name, "id", req.ID, "mounts", len(rest))
	return errResponse{}, nil
}

// path says where volume Name is mounted ("" when it is not).
func (p *Plugin) path(r *http.Request) (any, error) {
	req, err := decode(r)
	if err != nil {
		return nil, err
	}
	_, sess, err := p.volume(r.Context(), req.Name)
	if err != nil {
		return nil, err
	}
	return mountResponse{Mountpoint: p.mountpoint(sess)}, nil
}

// volumeInfo is a volume in Get and List.
type volumeInfo struct {
	Name       string         `json:"Name"`
	Mountpoint string         `json:"Mountpoint,omitempty"`
	CreatedAt  string         `json:"CreatedAt,omitempty"`
	Status     map[string]any `json:"Status,omitempty"`
}

// get describes volume Name; Status (docker volume inspect) tells its
// session's state.
func (p *Plugin) get(r *http.Request) (any, error) {
	req, err := decode(r)
	if err != nil {
		return nil, err
	}
	rec, sess, err := p.volume(r.Context(), req.Name)
	if err != nil {
		return nil, err
	}
	status := map[string]any{
		"session": sess.ID, "files": sess.Files, "bytes": sess.Bytes, "policy": sess.Policy,
		"mounts": len(rec.MountIDs),
		"see":    "vfsd session show " + sess.ID + "; vfsd diff " + sess.ID,
	}
	for k, v := range map[string]string{"base": sess.Base, "fork_of": sess.ForkOf, "last_snapshot": sess.LastSnapshot} {
		if v != "" {
			status[k] = v
		}
	}
	return struct {
		Volume volumeInfo `json:"Volume"`
		Err    string     `json:"Err"`
	}{Volume: volumeInfo{Name: rec.Name, Mountpoint: p.mountpoint(sess), CreatedAt: rec.Created.Format(time.RFC3339), Status: status}}, nil
}

// list lists the volumes whose sessions are open.
func (p *Plugin) list(r *http.Request) (any, error) {
	if _, err := decode(r); err != nil {
		return nil, err
	}
	recs, err := p.records()
	if err != nil {
		return nil, err
	}
	out := []volumeInfo{}
	for _, rec := range recs {
		sess, err := p.d.Session(r.Context(), rec.Name)
		if err != nil || sess.UID != rec.SessionUID {
			continue
		}
		out = append(out, volumeInfo{Name: rec.Name, Mountpoint: p.mountpoint(sess)})
	}
	return struct {
		Volumes []volumeInfo `json:"Volumes"`
		Err     string       `json:"Err"`
	}{Volumes: out}, nil
}

// goneError is a volume whose record outlived its session.
type goneError struct{ name string }

func (e *goneError) Error() string {
	return fmt.Sprintf("volume %s: its session was closed outside Docker; remove the volume (docker volume rm %s)", e.name, e.name)
}

// volume returns volume name's record and session. A name without a
// record is no volume; a record whose session is gone (or is another
// incarnation of the name) is a *goneError, with the record.
func (p *Plugin) volume(ctx context.Context, name string) (*record, *api.Session, error) {
	if volume.CheckName(name) != nil {
		return nil, nil, fmt.Errorf("no vfsd volume %q; list them with docker volume ls", name)
	}
	rec, err := p.load(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("no vfsd volume %q; list them with docker volume ls", name)
	} else if err != nil {
		return nil, nil, err
	}
	sess, err := p.d.Session(ctx, name)
	if err != nil {
		if isNotFound(err) {
			return rec, nil, &goneError{name}
		}
		return nil, nil, fmt.Errorf("volume %s: %s", name, message(err))
	}
	if sess.UID != rec.SessionUID {
		return rec, nil, &goneError{name}
	}
	return rec, sess, nil
}

// mountpoint is where sess is mounted as a volume, or "".
func (p *Plugin) mountpoint(sess *api.Session) string {
	if dir := p.mountDir(sess.ID); mountedAt(sess, dir) {
		return dir
	}
	return ""
}

// mountedAt reports whether sess is mounted at dir: the daemon says so and
// the kernel agrees (a mount taken down behind the daemon's back is not).
func mountedAt(sess *api.Session, dir string) bool {
	if !slices.ContainsFunc(sess.FuseMounts, func(fm api.FuseMount) bool { return fm.Dir == dir }) {
		return false
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return true // cannot tell: trust the daemon
	}
	return slices.ContainsFunc(ms, func(m mountinfo.Mount) bool { return m.MountPoint == dir })
}

// isNotFound reports whether err is the daemon's not_found.
func isNotFound(err error) bool {
	return errors.Is(err, &api.Error{Code: api.CodeNotFound})
}

// recordFormat versions the records.
const recordFormat = 1

// record is what the plugin keeps about a volume besides its session.
type record struct {
	Format int    `json:"format"`
	Name   string `json:"name"`
	// SessionUID is the incarnation of session Name that is the volume.
	SessionUID string `json:"session_uid"`
	// Options are the options the volume was created with, as given:
	// parsed again (volume.Parse) when it is mounted.
	Options map[string]string `json:"options,omitempty"`
	// MountIDs are the Docker mount IDs holding its mount.
	MountIDs []string  `json:"mount_ids,omitempty"`
	Created  time.Time `json:"created"`
}

func (p *Plugin) recordDir() string             { return filepath.Join(p.cfg.StateDir, "volumes") }
func (p *Plugin) mountRoot() string             { return filepath.Join(p.cfg.StateDir, "mnt") }
func (p *Plugin) recordPath(name string) string { return filepath.Join(p.recordDir(), name+".json") }
func (p *Plugin) mountDir(name string) string   { return filepath.Join(p.mountRoot(), name) }

// save writes rec atomically and durably.
func (p *Plugin) save(rec *record) error {
	rec.Format = recordFormat
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(p.recordPath(rec.Name), append(b, '\n'), 0o600, p.recordDir())
	}
	if err != nil {
		return fmt.Errorf("volume %s: save its record: %w", rec.Name, err)
	}
	return nil
}

// load reads volume name's record.
func (p *Plugin) load(name string) (*record, error) {
	b, err := os.ReadFile(p.recordPath(name))
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil || rec.Format != recordFormat || rec.Name != name {
		return nil, fmt.Errorf("volume %s: its record %s is damaged or of another format (%v); move it away to forget the volume", name, p.recordPath(name), err)
	}
	return &rec, nil
}

// records reads every record.
func (p *Plugin) records() ([]*record, error) {
	ents, err := os.ReadDir(p.recordDir())
	if err != nil {
		return nil, fmt.Errorf("docker plugin: read the volumes' records: %w", err)
	}
	var out []*record
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || volume.CheckName(name) != nil {
			continue // an interrupted save's temporary file, or not ours
		}
		rec, err := p.load(name)
		if err != nil {
			p.log.Warn("skipping a volume record", "err", err)
			continue
		}
		out = append(out, rec)
	}
	return out, nil
}

// drop forgets volume name: its record and its (unmounted) mount point.
func (p *Plugin) drop(name string) error {
	if err := os.Remove(p.recordPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("volume %s: remove its record: %w", name, err)
	}
	_ = os.Remove(p.mountDir(name))
	return nil
}

// dropStale drops the records of volumes whose session is gone (closed
// while the plugin was not serving).
func (p *Plugin) dropStale() {
	recs, err := p.records()
	if err != nil {
		p.log.Warn("docker plugin: cannot check the volumes' records", "err", err)
		return
	}
	for _, rec := range recs {
		sess, err := p.d.Session(context.Background(), rec.Name)
		if (err != nil && isNotFound(err)) || (err == nil && sess.UID != rec.SessionUID) {
			p.log.Info("docker volume's session is gone; forgetting the volume", "volume", rec.Name)
			if err := p.drop(rec.Name); err != nil {
				p.log.Warn("docker plugin", "err", err)
			}
		}
	}
}

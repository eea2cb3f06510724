// Package s3store is a snapshot.Store in S3-compatible object storage
// (Amazon S3, MinIO, versitygw, Ceph RGW, R2, GCS in interoperability mode),
// built on minio-go.
//
// A store is named by a URL:
//
//	s3://BUCKET[/PREFIX][?endpoint=HOST:PORT&region=REGION&insecure=1&create=1]
//
// endpoint defaults to s3.amazonaws.com; insecure=1 speaks plain HTTP (a
// server on loopback); create=1 creates the bucket if it is missing;
// path=1 forces path-style requests (the default for custom endpoints).
// Credentials come from, in order: the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; or MINIO_ROOT_USER and
// MINIO_ROOT_PASSWORD), the AWS shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, profile AWS_PROFILE),
// and the MinIO client's config (~/.mc/config.json). No cloud metadata
// endpoint is queried.
//
// Objects are stored under PREFIX/<namespace>/<64 hex digits>, one S3
// object each, uploaded whole (multipart for large ones), so an object
// exists completely or not at all. Every object read is downloaded whole
// and verified against its hash before a byte of it is returned.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// Config configures a Store.
type Config struct {
	Bucket string
	// Prefix is the key prefix of every object, without leading or
	// trailing slashes; "" stores at the bucket's root.
	Prefix string
	// Endpoint is host[:port]; s3.amazonaws.com when empty.
	Endpoint string
	// Region is the bucket's region; looked up when empty.
	Region string
	// Insecure speaks plain HTTP instead of HTTPS.
	Insecure bool
	// PathStyle forces path-style requests (bucket in the path, not the
	// host name). Custom endpoints use it unless virtual=1.
	PathStyle bool
	// Create makes the bucket when it does not exist.
	Create bool
	// AccessKey, SecretKey and SessionToken, when AccessKey is set, are
	// the credentials; otherwise the environment's and files' are used.
	AccessKey, SecretKey, SessionToken string
	// TempDir holds large objects being uploaded or verified; os.TempDir
	// when empty.
	TempDir string
	// MaxRetries is how often a failed request is retried; 3 when zero.
	MaxRetries int
}

// String returns the store's URL, without credentials.
func (c Config) String() string {
	s := "s3://" + c.Bucket
	if c.Prefix != "" {
		s += "/" + c.Prefix
	}
	var q []string
	if c.Endpoint != "" {
		q = append(q, "endpoint="+c.Endpoint)
	}
	if c.Region != "" {
		q = append(q, "region="+c.Region)
	}
	if c.Insecure {
		q = append(q, "insecure=1")
	}
	if len(q) > 0 {
		s += "?" + strings.Join(q, "&")
	}
	return s
}

// ParseURL parses an s3:// URL (see the package documentation).
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("remote %q: %w", raw, err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("remote %q: want s3://BUCKET[/PREFIX][?endpoint=HOST:PORT&region=R&insecure=1]", raw)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("remote %q: put no credentials in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or ~/.aws/credentials)", raw)
	}
	q := u.Query()
	flag := func(name string) bool {
		v := q.Get(name)
		return v == "1" || v == "true" || v == "yes"
	}
	c := Config{
		Bucket:   u.Host,
		Prefix:   strings.Trim(u.Path, "/"),
		Endpoint: q.Get("endpoint"),
		Region:   q.Get("region"),
		Insecure: flag("insecure"),
		Create:   flag("create"),
	}
	c.PathStyle = c.Endpoint != "" && !flag("virtual") || flag("path")
	for k := range q {
		switch k {
		case "endpoint", "region", "insecure", "create", "path", "virtual":
		default:
			return Config{}, fmt.Errorf("remote %q: unknown parameter %q (known: endpoint, region, insecure, create, path, virtual)", raw, k)
		}
	}
	return c, nil
}

// Store is a snapshot.Store in an S3 bucket. It is safe for concurrent use.
type Store struct {
	cfg    Config
	client *minio.Client
	closed atomic.Bool
}

var _ snapshot.Store = (*Store)(nil)

// OpenURL opens the store an s3:// URL names.
func OpenURL(ctx context.Context, raw string) (*Store, error) {
	cfg, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg)
}

// credentialsFor returns the credential chain of cfg: explicit keys, or the
// environment and the usual files (never a cloud metadata endpoint).
func credentialsFor(cfg Config) *credentials.Credentials {
	if cfg.AccessKey != "" {
		return credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	}
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.EnvMinio{},
		&credentials.FileAWSCredentials{},
		&credentials.FileMinioClient{},
	})
}

// NewClient returns the minio-go client the store uses for cfg: its
// endpoint and addressing, the credential chain (credentialsFor), retries
// and a transport with room for parallel uploads. It does not touch the
// bucket.
func NewClient(cfg Config) (*minio.Client, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	retries := cfg.MaxRetries
	if retries <= 0 {
		retries = 3
	}
	tr, err := minio.DefaultTransport(!cfg.Insecure)
	if err != nil {
		return nil, fmt.Errorf("s3 store %s: %w", cfg, err)
	}
	tr.MaxIdleConnsPerHost = 64
	tr.ResponseHeaderTimeout = 2 * time.Minute
	client, err := minio.New(endpoint, &minio.Options{
		Creds:        credentialsFor(cfg),
		Secure:       !cfg.Insecure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   retries,
		Transport:    tr,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 store %s: %w", cfg, err)
	}
	return client, nil
}

// Open connects to the bucket cfg names, checking that it exists (or
// creating it, with cfg.Create).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 store: no bucket")
	}
	client, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, client: client}
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 store %s: reach the bucket: %w; check the endpoint, the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and that the server runs", cfg, err)
	}
	if !ok {
		if !cfg.Create {
			return nil, fmt.Errorf("s3 store %s: bucket %q does not exist; create it, or add create=1 to the URL", cfg, cfg.Bucket)
		}
		if err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			if code := minio.ToErrorResponse(err).Code; code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, fmt.Errorf("s3 store %s: create the bucket: %w", cfg, err)
			}
		}
	}
	return s, nil
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// String returns the store's URL.
func (s *Store) String() string { return s.cfg.String() }

func (s *Store) key(ns snapshot.Namespace, h vfs.Hash) string {
	return s.nsPrefix(ns) + h.String()
}

func (s *Store) nsPrefix(ns snapshot.Namespace) string {
	if s.cfg.Prefix == "" {
		return string(ns) + "/"
	}
	return s.cfg.Prefix + "/" + string(ns) + "/"
}

// check fails for a closed store, a done context and an unknown namespace.
func (s *Store) check(ctx context.Context, op string, ns snapshot.Namespace) error {
	if s.closed.Load() {
		return &vfs.Error{Op: op, Code: vfs.CodeClosed, Msg: "store is closed"}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, ns, err)
	}
	for _, n := range snapshot.Namespaces {
		if ns == n {
			return nil
		}
	}
	return &vfs.Error{Op: op, Path: string(ns), Code: vfs.CodeInvalid, Msg: "unknown store namespace"}
}

func notFound(op string, ns snapshot.Namespace, h vfs.Hash) error {
	return &vfs.Error{Op: op + " " + string(ns), Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such object"}
}

// isNotFound reports whether err is S3's answer for a missing object.
func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.Code == "NoSuchKey" || r.Code == "NotFound" || r.StatusCode == http.StatusNotFound
}

// wrap adds context to a failed request, preferring the context's error.
func (s *Store) wrap(ctx context.Context, op string, ns snapshot.Namespace, h vfs.Hash, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		err = cerr
	}
	what := string(ns)
	if !h.IsZero() {
		what += " " + h.String()
	}
	return fmt.Errorf("%s %s in %s: %w", op, what, s.cfg, err)
}

// memLimit is the size up to which Put and Open keep an object in memory;
// larger ones go through a temporary file.
const memLimit = 8 << 20

// spool is an object's content, hashed, in memory or in a temporary file.
type spool struct {
	mem  []byte
	file *os.File
	size int64
	hash vfs.Hash
}

func (sp *spool) reader() io.ReadSeeker {
	if sp.file != nil {
		return io.NewSectionReader(sp.file, 0, sp.size)
	}
	return bytes.NewReader(sp.mem)
}

func (sp *spool) close() {
	if sp.file != nil {
		sp.file.Close()
	}
}

// cancelReader fails reads once ctx is done, and remembers r's own error.
type cancelReader struct {
	ctx    context.Context
	r      io.Reader
	failed error
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		c.failed = err
	}
	return n, err
}

// readSpool reads r whole into a spool, hashing it; content over memLimit
// goes to an unlinked temporary file. Content over max bytes (max >= 0)
// fails with an error matching vfs.ErrTooLarge once max+1 bytes are read.
func (s *Store) readSpool(r io.Reader, max int64) (*spool, error) {
	if max >= 0 {
		r = io.LimitReader(r, max+1)
	}
	hasher := vfs.NewHasher()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.TeeReader(io.LimitReader(r, memLimit+1), hasher))
	if err != nil {
		return nil, err
	}
	if max >= 0 && n > max {
		return nil, fmt.Errorf("more than %d bytes: %w", max, vfs.ErrTooLarge)
	}
	if n <= memLimit {
		return &spool{mem: buf.Bytes(), size: n, hash: vfs.SumHash(hasher)}, nil
	}
	f, err := os.CreateTemp(s.cfg.TempDir, "vfsd-s3-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name())
	sp := &spool{file: f}
	if _, err := f.Write(buf.Bytes()); err != nil {
		sp.close()
		return nil, err
	}
	m, err := io.Copy(f, io.TeeReader(r, hasher))
	if err != nil {
		sp.close()
		return nil, err
	}
	if max >= 0 && n+m > max {
		sp.close()
		return nil, fmt.Errorf("more than %d bytes: %w", max, vfs.ErrTooLarge)
	}
	sp.size, sp.hash = n+m, vfs.SumHash(hasher)
	return sp, nil
}

// Put stores r's content; see snapshot.Store. The content is read whole
// (and hashed) first; then, unless the bucket holds that content under its
// name already (not asked when opts.Absent), it is uploaded in one request
// (multipart for large content), which S3 makes visible at once and
// whole, over whatever the name held. opts.Deferred changes nothing: an
// uploaded object is durable when Put returns.
//
// Another party with access to the bucket may have written anything under
// the name, so an object there counts as the content only if it has its
// size and, read back, its hash; otherwise it is overwritten.
func (s *Store) Put(ctx context.Context, ns snapshot.Namespace, r io.Reader, opts snapshot.PutOptions) (vfs.Hash, int64, error) {
	o, err := s.PutInfo(ctx, ns, r, opts)
	return o.Hash, o.Size, err
}

// PutInfo is Put, also returning the stored object's ETag (see
// snapshot.InfoPutter); its Modified is zero.
func (s *Store) PutInfo(ctx context.Context, ns snapshot.Namespace, r io.Reader, opts snapshot.PutOptions) (snapshot.ObjectInfo, error) {
	const op = "put"
	if err := s.check(ctx, op, ns); err != nil {
		return snapshot.ObjectInfo{}, err
	}
	cr := &cancelReader{ctx: ctx, r: r}
	sp, err := s.readSpool(cr, -1)
	if err != nil {
		if cr.failed != nil {
			err = cr.failed
		} else if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return snapshot.ObjectInfo{}, fmt.Errorf("put %s: read content: %w", ns, err)
	}
	defer sp.close()
	if err := ctx.Err(); err != nil {
		return snapshot.ObjectInfo{}, fmt.Errorf("put %s: %w", ns, err)
	}
	if !opts.Absent {
		// With Absent the caller listed the bucket (or found the object
		// wrong): no request to check again, and an object there after
		// all is overwritten.
		tag, ok, err := s.holds(ctx, ns, sp)
		if err != nil {
			return snapshot.ObjectInfo{}, s.wrap(ctx, op, ns, sp.hash, err)
		}
		if ok {
			return snapshot.ObjectInfo{Hash: sp.hash, Size: sp.size, ETag: tag}, nil
		}
	}
	info, err := s.client.PutObject(ctx, s.cfg.Bucket, s.key(ns, sp.hash), sp.reader(), sp.size, minio.PutObjectOptions{
		ContentType:      "application/octet-stream",
		DisableMultipart: sp.size <= 64<<20,
		PartSize:         16 << 20,
	})
	if err != nil {
		return snapshot.ObjectInfo{}, s.wrap(ctx, op, ns, sp.hash, err)
	}
	return snapshot.ObjectInfo{Hash: sp.hash, Size: sp.size, ETag: info.ETag}, nil
}

// holds reports whether the bucket holds sp's content under its name, and
// with which ETag: an object there of another size, or whose content read
// back does not hash to the name, does not count.
func (s *Store) holds(ctx context.Context, ns snapshot.Namespace, sp *spool) (string, bool, error) {
	st, err := s.client.StatObject(ctx, s.cfg.Bucket, s.key(ns, sp.hash), minio.StatObjectOptions{})
	switch {
	case isNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, err
	case st.Size != sp.size:
		return "", false, nil
	}
	b, err := s.OpenCapped(ctx, ns, sp.hash, sp.size)
	switch {
	case err == nil:
		defer b.Close()
		var tag string
		if t, ok := b.(snapshot.ETagger); ok {
			tag = t.ETag()
		}
		return tag, true, nil
	case errors.Is(err, vfs.ErrNotFound), errors.Is(err, snapshot.ErrCorruptObject), errors.Is(err, vfs.ErrTooLarge):
		return "", false, nil
	default:
		return "", false, err
	}
}

// Open downloads an object whole, verifies it against its hash and returns
// a reader of the verified copy (in memory, or in an unlinked temporary
// file when large). A missing object is an error matching vfs.ErrNotFound;
// one whose content does not match its name matches
// snapshot.ErrCorruptObject.
func (s *Store) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	return s.OpenCapped(ctx, ns, h, -1)
}

// OpenCapped is Open, refusing an object larger than max bytes (max >= 0)
// with an error matching vfs.ErrTooLarge once max+1 bytes of it are read
// (see snapshot.CappedOpener): nothing over max reaches the disk. The blob
// returned knows the ETag it was read with (snapshot.ETagger).
func (s *Store) OpenCapped(ctx context.Context, ns snapshot.Namespace, h vfs.Hash, max int64) (vfs.Blob, error) {
	const op = "open"
	if err := s.check(ctx, op, ns); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, s.key(ns, h), minio.GetObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return nil, notFound(op, ns, h)
		}
		return nil, s.wrap(ctx, op, ns, h, err)
	}
	defer obj.Close()
	// No size check before reading: minio-go would send a HEAD for it (a
	// round trip more per object), and reporting the size after a read
	// upsets its reads. A body over max is cut off after max+1 bytes.
	sp, err := s.readSpool(obj, max)
	if errors.Is(err, vfs.ErrTooLarge) {
		return nil, fmt.Errorf("%s %s %s in %s: %w", op, ns, h, s.cfg, err)
	}
	if err != nil {
		if isNotFound(err) {
			return nil, notFound(op, ns, h)
		}
		return nil, s.wrap(ctx, op, ns, h, err)
	}
	if sp.hash != h {
		sp.close()
		return nil, fmt.Errorf("open %s %s in %s: %w (content hashes to %s)", ns, h, s.cfg, snapshot.ErrCorruptObject, sp.hash)
	}
	// The response's headers, read with the body: no request more.
	var tag string
	if info, err := obj.Stat(); err == nil {
		tag = info.ETag
	}
	if sp.file != nil {
		return taggedBlob{fileBlob{f: sp.file, size: sp.size}, tag}, nil
	}
	return taggedBlob{memBlob{bytes.NewReader(sp.mem)}, tag}, nil
}

// Stat returns an object's size, or an error matching vfs.ErrNotFound.
func (s *Store) Stat(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (int64, error) {
	const op = "stat"
	if err := s.check(ctx, op, ns); err != nil {
		return 0, err
	}
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, s.key(ns, h), minio.StatObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return 0, notFound(op, ns, h)
		}
		return 0, s.wrap(ctx, op, ns, h, err)
	}
	return info.Size, nil
}

// Delete removes an object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	const op = "delete"
	if err := s.check(ctx, op, ns); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.key(ns, h), minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return s.wrap(ctx, op, ns, h, err)
	}
	return nil
}

// List calls fn for every object in ns; see snapshot.Store.
func (s *Store) List(ctx context.Context, ns snapshot.Namespace, fn func(h vfs.Hash, size int64) error) error {
	return s.ListInfo(ctx, ns, func(o snapshot.ObjectInfo) error { return fn(o.Hash, o.Size) })
}

// ListInfo calls fn for every object in ns with its size and the time it
// was stored, until fn returns an error, which ListInfo returns. Keys in
// the namespace's prefix that are not object names are skipped.
func (s *Store) ListInfo(ctx context.Context, ns snapshot.Namespace, fn func(snapshot.ObjectInfo) error) error {
	const op = "list"
	if err := s.check(ctx, op, ns); err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the lister when fn stops early
	prefix := s.nsPrefix(ns)
	for obj := range s.client.ListObjects(lctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return s.wrap(ctx, op, ns, vfs.Hash{}, obj.Err)
		}
		h, err := vfs.ParseHash(strings.TrimPrefix(obj.Key, prefix))
		if err != nil {
			continue
		}
		if err := fn(snapshot.ObjectInfo{Hash: h, Size: obj.Size, Modified: obj.LastModified, ETag: obj.ETag}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, ns, err)
	}
	return nil
}

// Touch renews an object's modification time, so that remote garbage
// collection's grace period starts anew: by a server-side copy of the
// object onto itself with its metadata replaced, or, on servers where that
// keeps the old time (versitygw), by downloading, verifying and uploading
// it again. A missing object is an error matching vfs.ErrNotFound.
func (s *Store) Touch(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	const op = "touch"
	if err := s.check(ctx, op, ns); err != nil {
		return err
	}
	key := s.key(ns, h)
	before, err := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return notFound(op, ns, h)
		}
		return s.wrap(ctx, op, ns, h, err)
	}
	_, err = s.client.CopyObject(ctx,
		minio.CopyDestOptions{Bucket: s.cfg.Bucket, Object: key, ReplaceMetadata: true,
			UserMetadata: map[string]string{"Vfsd-Touched": time.Now().UTC().Format(time.RFC3339Nano)}},
		minio.CopySrcOptions{Bucket: s.cfg.Bucket, Object: key})
	if err == nil {
		after, serr := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
		if serr == nil && after.LastModified.After(before.LastModified) {
			return nil
		}
	}
	b, err := s.Open(ctx, ns, h)
	if err != nil {
		return err
	}
	defer b.Close()
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, key, io.NewSectionReader(b, 0, b.Size()), b.Size(), minio.PutObjectOptions{
		ContentType: "application/octet-stream", DisableMultipart: b.Size() <= 64<<20, PartSize: 16 << 20})
	if err != nil {
		return s.wrap(ctx, op, ns, h, err)
	}
	return nil
}

var (
	_ snapshot.InfoLister   = (*Store)(nil)
	_ snapshot.Toucher      = (*Store)(nil)
	_ snapshot.InfoPutter   = (*Store)(nil)
	_ snapshot.CappedOpener = (*Store)(nil)
)

// Sync does nothing but check the store is open: every Put is durable
// when it returns.
func (s *Store) Sync(ctx context.Context) error {
	if s.closed.Load() {
		return &vfs.Error{Op: "sync", Code: vfs.CodeClosed, Msg: "store is closed"}
	}
	return nil
}

// Close marks the store closed; later calls fail with an error matching
// vfs.ErrClosed, except Close. Readers already open stay usable.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// taggedBlob is a verified object and the ETag it was read with.
type taggedBlob struct {
	vfs.Blob
	etag string
}

// ETag returns the ETag the object was read with; see snapshot.ETagger.
func (b taggedBlob) ETag() string { return b.etag }

// memBlob reads a verified object held in memory.
type memBlob struct{ r *bytes.Reader }

func (b memBlob) ReadAt(p []byte, off int64) (int, error) { return b.r.ReadAt(p, off) }
func (b memBlob) Size() int64                             { return b.r.Size() }
func (b memBlob) Close() error                            { return nil }

// fileBlob reads a verified object held in an unlinked temporary file.
type fileBlob struct {
	f    *os.File
	size int64
}

func (b fileBlob) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("read at a negative offset")
	}
	if off >= b.size {
		return 0, io.EOF
	}
	return b.f.ReadAt(p, off)
}
func (b fileBlob) Size() int64  { return b.size }
func (b fileBlob) Close() error { return b.f.Close() }

// packPrefix is where the bucket keeps blob packs.
func (s *Store) packPrefix() string { return s.nsPrefix("packs") }

// PutPack stores a pack (see snapshot.PackStore) in one PUT of known
// length, streamed from r: nothing is spooled, and a reader failing midway
// fails the request, so no partial pack is stored.
func (s *Store) PutPack(ctx context.Context, name vfs.Hash, size int64, r io.Reader) (snapshot.ObjectInfo, error) {
	const op = "put pack"
	if s.closed.Load() {
		return snapshot.ObjectInfo{}, &vfs.Error{Op: op, Code: vfs.CodeClosed, Msg: "store is closed"}
	}
	cr := &cancelReader{ctx: ctx, r: r}
	info, err := s.client.PutObject(ctx, s.cfg.Bucket, s.packPrefix()+name.String(), cr, size, minio.PutObjectOptions{
		ContentType:      "application/octet-stream",
		DisableMultipart: size <= 64<<20,
		PartSize:         16 << 20,
	})
	if err != nil {
		if cr.failed != nil {
			err = cr.failed
		}
		return snapshot.ObjectInfo{}, s.wrap(ctx, op, "packs", name, err)
	}
	if info.Size != size {
		return snapshot.ObjectInfo{}, fmt.Errorf("%s %s in %s: stored %d bytes of %d", op, name, s.cfg, info.Size, size)
	}
	return snapshot.ObjectInfo{Hash: name, Size: size, ETag: info.ETag, Modified: time.Now()}, nil
}

// ReadPack reads n bytes of a pack from off with one ranged GET (see
// snapshot.PackStore).
func (s *Store) ReadPack(ctx context.Context, name vfs.Hash, off, n int64) ([]byte, string, error) {
	const op = "read pack"
	if s.closed.Load() {
		return nil, "", &vfs.Error{Op: op, Code: vfs.CodeClosed, Msg: "store is closed"}
	}
	if off < 0 || n <= 0 {
		return nil, "", fmt.Errorf("%s %s: bad range %d+%d", op, name.Short(), off, n)
	}
	var o minio.GetObjectOptions
	if err := o.SetRange(off, off+n-1); err != nil {
		return nil, "", err
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, s.packPrefix()+name.String(), o)
	if err != nil {
		if isNotFound(err) {
			return nil, "", notFound(op, "packs", name)
		}
		return nil, "", s.wrap(ctx, op, "packs", name, err)
	}
	defer obj.Close()
	buf := make([]byte, n)
	// One byte more than asked tells a server that ignored the range.
	got, err := io.ReadFull(obj, buf)
	if err != nil {
		if isNotFound(err) {
			return nil, "", notFound(op, "packs", name)
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, "", fmt.Errorf("%s %s in %s: %d of %d bytes at %d: %w", op, name, s.cfg, got, n, off, err)
	}
	if extra, _ := obj.Read(make([]byte, 1)); extra != 0 {
		return nil, "", fmt.Errorf("%s %s in %s: the server sent more than the range asked for", op, name, s.cfg)
	}
	var tag string
	if info, err := obj.Stat(); err == nil {
		tag = info.ETag
	}
	return buf, tag, nil
}

// ListPacks calls fn for every pack of the bucket (see snapshot.PackStore).
func (s *Store) ListPacks(ctx context.Context, fn func(snapshot.ObjectInfo) error) error {
	const op = "list packs"
	if s.closed.Load() {
		return &vfs.Error{Op: op, Code: vfs.CodeClosed, Msg: "store is closed"}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := s.packPrefix()
	for obj := range s.client.ListObjects(lctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return s.wrap(ctx, op, "packs", vfs.Hash{}, obj.Err)
		}
		h, err := vfs.ParseHash(strings.TrimPrefix(obj.Key, prefix))
		if err != nil {
			continue
		}
		if err := fn(snapshot.ObjectInfo{Hash: h, Size: obj.Size, Modified: obj.LastModified, ETag: obj.ETag}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// DeletePack removes a pack; a missing one is not an error.
func (s *Store) DeletePack(ctx context.Context, name vfs.Hash) error {
	const op = "delete pack"
	if s.closed.Load() {
		return &vfs.Error{Op: op, Code: vfs.CodeClosed, Msg: "store is closed"}
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.packPrefix()+name.String(), minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return s.wrap(ctx, op, "packs", name, err)
	}
	return nil
}

var _ snapshot.PackStore = (*Store)(nil)

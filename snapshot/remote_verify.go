package snapshot

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// What a push takes the remote's word for.
//
// The remote is a bucket that other parties may write to: a name there
// says nothing about the content under it. So a push never trusts a
// listing for content. An object the snapshot needs that the listing shows
// is relied on as it is only when this daemon knows its content is right —
// it uploaded it, fetched it and checked its hash, or read it back in an
// earlier push — and the listing still shows the size and ETag it had then
// (a goodMark). Any other object the listing shows is checked:
//
//   - its size against the local copy's (the listing gives sizes, so this
//     costs nothing); a wrong size is overwritten with the local copy;
//   - when the size is right and the object is at most verifyMaxBytes, its
//     content: it is downloaded and hashed, and overwritten if it does not
//     match (the report's Repaired); a match is remembered (Verified);
//   - a larger one is overwritten unread (Rewritten): reading it would cost
//     as much as sending it, and would spool it to disk first;
//   - a blob that is not local (a fork's file this daemon never read) can
//     be neither read cheaply nor repaired here: its size is checked
//     against the snapshot's tree, and a wrong one is reported
//     (Unrepaired) and logged — the daemon that has the content repairs it
//     by pushing again.
//
// Marks survive restarts (RemoteOptions.StateDir, file "verified": new ones
// appended after each push, the file rewritten at close). A push of a
// snapshot the remote already has whole (a push again) lists the remote
// anew first, so that an object another party overwrote since is seen —
// its size or ETag differ from the mark — and repaired.
//
// Residual: with a store whose listing gives no ETag, an object overwritten
// after this daemon marked it with content of the same size is not seen
// until it is read (a fork's corrupt_object); S3 servers give ETags.

// verifyMaxBytes is the largest object a push reads back to check its
// content; larger ones whose content is not known good are overwritten.
// It is what s3store keeps in memory while it verifies a download.
const verifyMaxBytes = 8 << 20

// InfoPutter is implemented by stores whose Put also tells what a listing
// of the store will show for the object stored (its ETag): a push keeps it
// to see later whether someone else overwrote the object.
type InfoPutter interface {
	// PutInfo is Put, returning the stored object's description.
	PutInfo(ctx context.Context, ns Namespace, r io.Reader, opts PutOptions) (ObjectInfo, error)
}

// ETagger is implemented by blobs that a remote store opens and that know
// the ETag of the object they were read from.
type ETagger interface {
	ETag() string
}

// etag is a digest of an ETag (ObjectInfo.ETag) small enough to keep for
// every object of a large bucket; zero for none.
type etag [16]byte

func etagOf(s string) etag {
	var e etag
	if s != "" {
		h := vfs.HashOf([]byte(s))
		copy(e[:], h[:])
	}
	return e
}

// blobETag returns the ETag a remote blob was read with, if it knows it.
func blobETag(b vfs.Blob) etag {
	if t, ok := b.(ETagger); ok {
		return etagOf(t.ETag())
	}
	return etag{}
}

// remoteObj is what the remote is known to hold under a name: as the last
// listing showed it, or as this daemon stored or read it since.
type remoteObj struct {
	mod  time.Time
	size int64
	tag  etag
	// checked: its size matched the snapshot tree that needs it, and it
	// is not local (see the comment above); good enough for pushes until
	// the next listing.
	checked bool
	// pack is the pack holding a packed blob (its tag is the pack's), nil
	// for an object of its own.
	pack *remotePack
	// wrong: the pack was found to hold other content for some blob.
	wrong bool
}

// goodMark says this daemon knows the content under a name of the remote
// is right, as long as the remote shows it with this size and ETag.
type goodMark struct {
	size int64
	tag  etag
}

// goodLocked reports whether the remote's object k, listed as e, is known
// to hold the right content. knownMu is held.
func (l *remoteLink) goodLocked(k objKey, e remoteObj) bool {
	g, ok := l.good[k]
	return ok && g.size == e.size && (e.tag == etag{} || g.tag == e.tag)
}

// markGood records that the remote holds the right content under k, of
// size bytes and ETag tag: stored by this daemon just now (stored), or read
// from the remote and checked — then its time there is what the listing
// said, or unknown (zero: old, so a push relying on it renews it).
func (l *remoteLink) markGood(k objKey, size int64, tag etag, stored bool) {
	l.markGoodIn(k, size, tag, stored, nil)
}

// markGoodIn is markGood for a blob in pack p (nil: an object of its
// own), whose ETag tag is.
func (l *remoteLink) markGoodIn(k objKey, size int64, tag etag, stored bool, p *remotePack) {
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	if g, ok := l.good[k]; !ok || g != (goodMark{size, tag}) {
		l.good[k] = goodMark{size, tag}
		l.goodNew = append(l.goodNew, k)
	}
	if l.known != nil {
		e := remoteObj{size: size, tag: tag, pack: p}
		if stored {
			e.mod = time.Now()
		} else if old, ok := l.known[k]; ok {
			e.mod = old.mod
		}
		l.known[k] = e
	}
}

// dropGood forgets that k was known good (found otherwise).
func (l *remoteLink) dropGood(k objKey) {
	l.knownMu.Lock()
	delete(l.good, k)
	if e, ok := l.known[k]; ok {
		e.checked = false
		l.known[k] = e
	}
	l.knownMu.Unlock()
}

// pushedWhole reports whether the remote is known to hold snapshot id's
// record, good: a push of it is a push again.
func (l *remoteLink) pushedWhole(id vfs.Hash) bool {
	k := objKey{Records, id}
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	e, ok := l.known[k]
	return ok && l.goodLocked(k, e)
}

func (l *remoteLink) goodPath() string { return filepath.Join(l.opts.StateDir, "verified") }

// goodHeader heads the verified list: the marks hold for this remote only
// (a daemon pointed at another bucket starts afresh).
func (l *remoteLink) goodHeader() string { return "vfsd-verified/1 " + fmt.Sprint(l.store) + "\n" }

// loadGood reads the marks kept in StateDir, if they are of this remote.
func (l *remoteLink) loadGood() error {
	f, err := os.Open(l.goodPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remote verified list: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text()+"\n" != l.goodHeader() {
		return nil
	}
	for sc.Scan() {
		k, g, ok := parseGoodLine(sc.Text())
		if ok {
			l.good[k] = g
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("remote verified list: %w", err)
	}
	return nil
}

// A line of the verified list: namespace, hash, size, ETag digest ("-"
// for none).
func goodLine(b []byte, k objKey, g goodMark) []byte {
	b = append(b, k.ns...)
	b = append(b, ' ')
	b = append(b, k.h.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, g.size, 10)
	b = append(b, ' ')
	if g.tag == (etag{}) {
		b = append(b, '-')
	} else {
		b = hex.AppendEncode(b, g.tag[:])
	}
	return append(b, '\n')
}

func parseGoodLine(s string) (objKey, goodMark, bool) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return objKey{}, goodMark{}, false
	}
	ns := Namespace(f[0])
	if ns != Blobs && ns != Records {
		return objKey{}, goodMark{}, false
	}
	h, err := vfs.ParseHash(f[1])
	if err != nil {
		return objKey{}, goodMark{}, false
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return objKey{}, goodMark{}, false
	}
	var tag etag
	if f[3] != "-" {
		b, err := hex.DecodeString(f[3])
		if err != nil || len(b) != len(tag) {
			return objKey{}, goodMark{}, false
		}
		copy(tag[:], b)
	}
	return objKey{ns, h}, goodMark{size, tag}, true
}

// flushGood appends the marks made since the last flush to StateDir's
// list: a crash loses at most the marks of the push in progress, which the
// next push checks again.
func (l *remoteLink) flushGood() error {
	if l.opts.StateDir == "" {
		return nil
	}
	l.knownMu.Lock()
	var b []byte
	for _, k := range l.goodNew {
		if g, ok := l.good[k]; ok {
			b = goodLine(b, k, g)
		}
	}
	l.goodNew = l.goodNew[:0]
	l.knownMu.Unlock()
	if len(b) == 0 {
		return nil
	}
	f, err := os.OpenFile(l.goodPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("remote verified list: %w", err)
	}
	if st, serr := f.Stat(); serr == nil && st.Size() == 0 {
		b = append([]byte(l.goodHeader()), b...)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("remote verified list: %w", err)
	}
	return nil
}

// saveGood rewrites StateDir's list whole, without the marks of objects
// the last listing no longer showed.
func (l *remoteLink) saveGood() error {
	if l.opts.StateDir == "" {
		return nil
	}
	l.knownMu.Lock()
	b := []byte(l.goodHeader())
	for k, g := range l.good {
		if _, ok := l.known[k]; ok || l.known == nil {
			b = goodLine(b, k, g)
		}
	}
	l.goodNew = l.goodNew[:0]
	l.knownMu.Unlock()
	return writeFileAtomic(l.goodPath(), b, 0o600)
}

// PushedWhole reports whether this daemon knows snapshot id to be in the
// remote whole: it pushed (or verified) the snapshot's record there, and
// the remote still lists it as it was. A push uploads the record last, so
// a record pushed means everything it needs was pushed before it.
func (r *Repo) PushedWhole(id string) bool {
	h, err := vfs.ParseHash(id)
	if r.remote == nil || err != nil {
		return false
	}
	return r.remote.pushedWhole(h)
}

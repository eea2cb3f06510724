package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/osfile"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// The call log's bounds.
const (
	// callLogMaxBytes bounds a session's call log file: past it, the
	// oldest records are dropped until half of it is left.
	callLogMaxBytes = 8 << 20
	// callSummaryBytes bounds a record's summary (the start of the text).
	callSummaryBytes = 512
	// callSyncDelay is how long an appended record may wait for its
	// fsync: records written meanwhile share it. A crash loses at most the
	// records of the last callSyncDelay; the session's journal, which holds
	// the changes themselves, is not affected.
	callSyncDelay = 50 * time.Millisecond
	// callPageMax bounds one page of GET /v1/sessions/{id}/calls.
	callPageMax = 1000
)

// callLogDir is where the call logs live: calls/ID.jsonl in the data dir,
// beside the sessions' journals (sessions/ID).
func (d *Daemon) callLogDir() string { return filepath.Join(d.cfg.DataDir, "calls") }

func (d *Daemon) callLogPath(id string) string { return filepath.Join(d.callLogDir(), id+".jsonl") }

// callLog is one session's durable, append-only log of tool calls: one
// JSON line (api.Call) per call, in the order the calls finished. Params
// and results over api.CallInlineBytes are stored as blobs, pinned against
// garbage collection while their record is in the log.
type callLog struct {
	path  string
	blobs blobPinner

	mu      sync.Mutex
	f       *os.File
	size    int64
	next    uint64 // the N of the next record
	recs    []callIndex
	pending bool // a sync is scheduled
	closed  bool
	syncErr error
}

// callIndex locates one record in the file.
type callIndex struct {
	n     uint64
	off   int64
	len   int64
	unpin []func() // the pins of its blobs
}

// blobPinner stores blobs and pins stored ones again (after a restart).
type blobPinner interface {
	Put(ctx context.Context, r io.Reader, deferred bool) (vfs.Hash, int64, func(), error)
	Adopt(ctx context.Context, h vfs.Hash) (unpin func(), ok bool, err error)
}

// openCallLog opens (creating it if need be) the call log at path,
// dropping a record a crash cut short, and pins the blobs its records
// name.
func openCallLog(ctx context.Context, path string, blobs blobPinner) (*callLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("call log: %w", err)
	}
	f, err := osfile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("call log: %w", err)
	}
	l := &callLog{path: path, blobs: blobs, f: f, next: 1}
	if err := l.load(ctx); err != nil {
		f.Close()
		l.unpinAll()
		return nil, fmt.Errorf("call log %s: %w", path, err)
	}
	return l, nil
}

// load indexes the records, truncating a torn last line.
func (l *callLog) load(ctx context.Context) error {
	r := bufio.NewReaderSize(l.f, 64<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var c api.Call
			if jerr := json.Unmarshal(line, &c); jerr != nil || c.N < l.next {
				return fmt.Errorf("record at byte %d is damaged (%v); move the file away to start the log afresh", off, jerr)
			}
			idx := callIndex{n: c.N, off: off, len: int64(len(line))}
			for _, ref := range []string{c.ParamsRef, c.ResultRef} {
				if ref == "" {
					continue
				}
				if h, perr := vfs.ParseHash(strings.TrimPrefix(ref, tools.BlobRefPrefix)); perr == nil {
					if unpin, ok, aerr := l.blobs.Adopt(ctx, h); aerr == nil && ok {
						idx.unpin = append(idx.unpin, unpin)
					}
				}
			}
			l.recs = append(l.recs, idx)
			l.next = c.N + 1
			off += int64(len(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := l.f.Truncate(off); err != nil { // a torn record, if any
		return err
	}
	if _, err := l.f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	l.size = off
	return nil
}

// inline returns raw as a record field, or stores it as a blob and returns
// its reference when it is larger than api.CallInlineBytes.
func (l *callLog) inline(ctx context.Context, raw []byte, grant func(vfs.Hash)) (json.RawMessage, string, func(), error) {
	if len(raw) == 0 {
		return nil, "", nil, nil
	}
	if len(raw) <= api.CallInlineBytes && json.Valid(raw) {
		return json.RawMessage(raw), "", nil, nil
	}
	h, _, unpin, err := l.blobs.Put(ctx, bytes.NewReader(raw), false)
	if err != nil {
		return nil, "", nil, err
	}
	if grant != nil {
		grant(h)
	}
	return nil, tools.BlobRefPrefix + h.String(), unpin, nil
}

// append numbers c, stores its large parts as blobs, and appends it; the
// record is durable within callSyncDelay. It returns the record's N.
func (l *callLog) append(ctx context.Context, c api.Call, params, result []byte, grant func(vfs.Hash)) (uint64, error) {
	var pins []func()
	var err error
	var unpin func()
	if c.Params, c.ParamsRef, unpin, err = l.inline(ctx, params, grant); err != nil {
		return 0, fmt.Errorf("call log: store params: %w", err)
	}
	if unpin != nil {
		pins = append(pins, unpin)
	}
	if c.Result, c.ResultRef, unpin, err = l.inline(ctx, result, grant); err != nil {
		for _, u := range pins {
			u()
		}
		return 0, fmt.Errorf("call log: store result: %w", err)
	}
	if unpin != nil {
		pins = append(pins, unpin)
	}
	c.Summary = truncateUTF8(c.Summary, callSummaryBytes)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		for _, u := range pins {
			u()
		}
		return 0, errors.New("call log: the session was closed")
	}
	c.N = l.next
	line, err := json.Marshal(c)
	if err != nil {
		return 0, fmt.Errorf("call log: %w", err)
	}
	line = append(line, '\n')
	if _, err := l.f.Write(line); err != nil {
		// A short write leaves a torn line: cut it off so the next record
		// starts clean.
		_ = l.f.Truncate(l.size)
		_, _ = l.f.Seek(l.size, io.SeekStart)
		for _, u := range pins {
			u()
		}
		return 0, fmt.Errorf("call log: %w", err)
	}
	l.recs = append(l.recs, callIndex{n: c.N, off: l.size, len: int64(len(line)), unpin: pins})
	l.size += int64(len(line))
	l.next++
	if !l.pending {
		l.pending = true
		time.AfterFunc(callSyncDelay, l.sync)
	}
	if l.size > callLogMaxBytes {
		if err := l.compactLocked(); err != nil {
			return c.N, err
		}
	}
	return c.N, nil
}

// sync makes the records appended so far durable.
func (l *callLog) sync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = false
	if l.closed {
		return
	}
	if err := l.f.Sync(); err != nil {
		l.syncErr = err
	}
}

// compactLocked drops the oldest records until the log holds at most half
// of callLogMaxBytes (always keeping the newest record, which carries the
// numbering on), and replaces the file atomically.
func (l *callLog) compactLocked() error {
	keep := len(l.recs) - 1
	var kept int64 = l.recs[keep].len
	for keep > 0 && kept+l.recs[keep-1].len <= callLogMaxBytes/2 {
		keep--
		kept += l.recs[keep].len
	}
	tmp := l.path + ".tmp"
	out, err := osfile.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("call log: compact: %w", err)
	}
	start := l.recs[keep].off
	if _, err := io.Copy(out, io.NewSectionReader(l.f, start, l.size-start)); err == nil {
		err = out.Sync()
	}
	if err == nil {
		// Closed first: Windows refuses to rename over an open file. A
		// failed rename reopens it, leaving the log as it was.
		_ = l.f.Close()
		if err = os.Rename(tmp, l.path); err != nil {
			if f, rerr := osfile.OpenFile(l.path, os.O_RDWR, 0); rerr != nil {
				err = errors.Join(err, rerr)
			} else if _, rerr := f.Seek(l.size, io.SeekStart); rerr != nil {
				f.Close()
				err = errors.Join(err, rerr)
			} else {
				l.f = f
			}
		}
	}
	if err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("call log: compact: %w", err)
	}
	_ = syncDir(filepath.Dir(l.path))
	l.f = out
	if _, err := l.f.Seek(0, io.SeekEnd); err != nil {
		return fmt.Errorf("call log: compact: %w", err)
	}
	for _, r := range l.recs[:keep] {
		for _, u := range r.unpin {
			u()
		}
	}
	l.recs = append([]callIndex(nil), l.recs[keep:]...)
	for i := range l.recs {
		l.recs[i].off -= start
	}
	l.size -= start
	return nil
}

// list returns up to limit records with N > since, oldest first, and the N
// to ask from for the next page (0 at the end).
func (l *callLog) list(since uint64, limit int) (*api.CallList, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := &api.CallList{Calls: []api.Call{}}
	if len(l.recs) > 0 {
		out.Oldest = l.recs[0].n
	}
	// Records are in N order: find the first after since.
	lo, hi := 0, len(l.recs)
	for lo < hi {
		mid := (lo + hi) / 2
		if l.recs[mid].n <= since {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for i := lo; i < len(l.recs) && len(out.Calls) < limit; i++ {
		r := l.recs[i]
		buf := make([]byte, r.len)
		if _, err := l.f.ReadAt(buf, r.off); err != nil {
			return nil, fmt.Errorf("call log: read call %d: %w", r.n, err)
		}
		var c api.Call
		if err := json.Unmarshal(buf, &c); err != nil {
			return nil, fmt.Errorf("call log: call %d: %w", r.n, err)
		}
		out.Calls = append(out.Calls, c)
	}
	if n := len(out.Calls); n > 0 && lo+n < len(l.recs) {
		out.Next = out.Calls[n-1].N
	}
	return out, nil
}

// count is the number of calls ever logged (the N of the last one).
func (l *callLog) count() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// close syncs and closes the file and unpins the records' blobs; with
// remove, it deletes the file too (the session is gone).
func (l *callLog) close(remove bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.f.Sync()
	err = errors.Join(err, l.f.Close())
	l.unpinAllLocked()
	if remove {
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return fmt.Errorf("call log %s: %w", l.path, err)
	}
	return nil
}

func (l *callLog) unpinAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unpinAllLocked()
}

func (l *callLog) unpinAllLocked() {
	for _, r := range l.recs {
		for _, u := range r.unpin {
			u()
		}
	}
	l.recs = nil
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// removeStrayCallLogs deletes the call logs of sessions that no longer
// exist (closed while the daemon was down, or before a crash removed
// their log).
func (d *Daemon) removeStrayCallLogs() {
	entries, err := os.ReadDir(d.callLogDir())
	if err != nil {
		return
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, de := range entries {
		id, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if e := d.sessions[id]; !ok || e == nil {
			_ = os.Remove(filepath.Join(d.callLogDir(), de.Name()))
		}
	}
}

package vfs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/vfsd/vfsd/internal/osfile"
)

// journalFormat names the on-disk format in every journal header.
const journalFormat = "vfsd-journal/1"

// maxRecord bounds one journal record; a longer length field means the tail
// is torn or corrupt.
const maxRecord = 64 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// JournalHeader is the first record of a journal: which session it belongs
// to and which snapshots its events fold over.
type JournalHeader struct {
	Format  string `json:"format"`
	Session string `json:"session"`
	Base    string `json:"base,omitempty"`    // snapshot the events apply to ("" = empty tree)
	Initial string `json:"initial,omitempty"` // snapshot Reset returns to
	Created int64  `json:"created"`           // Unix ms the session was created
	// InoFloor is the inode high-water mark the base is raised to: a
	// compacted journal's base is a restored snapshot, and inode numbers
	// handed out before the restore must never be handed out again.
	InoFloor uint64 `json:"ino_floor,omitempty"`
	// Owner is the session's default owner (Options.Owner); journals of
	// older versions have none and take the options' owner.
	Owner *Owner `json:"owner,omitempty"`
	// SeqBase is the sequence number of the event just before the
	// journal's first: a compacted journal keeps numbering its events as
	// before (the restore it starts at is event SeqBase), so positions
	// others recorded (the call log's) stay valid across restarts.
	SeqBase uint64 `json:"seq_base,omitempty"`
}

// Journal is a session's append-only event log. Each record is framed as
// [length uint32 LE][CRC-32C uint32 LE][JSON payload]; the first record is
// the header. Appends are ordered by the caller (the session lock) and made
// durable by group commit: one fdatasync covers every record appended
// before it, however many goroutines wait on it.
type Journal struct {
	path string

	mu       sync.Mutex
	cond     *sync.Cond
	f        *os.File
	size     int64  // offset just past the last whole record
	appended uint64 // events appended (the header not counted)
	synced   uint64 // events known durable
	syncing  bool   // a goroutine is in fdatasync
	err      error  // sticky: once the file failed, every call fails
	closed   bool
	stop     chan struct{} // closes the background flusher

	// beforeSync, when set (once, before the journal is shared), wraps
	// every fdatasync: the session makes the content its records name
	// durable first (see Session.syncJournal).
	beforeSync func(sync func() error) error
}

// createJournal atomically writes a new journal — header, then events,
// whose snapshotted sequence numbers are lowered by shift — replacing any
// journal at path, and opens it for appending. The events are numbered
// from h.SeqBase+1.
func createJournal(path string, h JournalHeader, events []*Event, shift uint64) (*Journal, error) {
	h.Format = journalFormat
	payload, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode journal header: %w", err)
	}
	buf := frame(payload)
	for _, e := range events {
		if e.Op == OpSnapshotted {
			c := *e
			c.Seq -= shift
			e = &c
		}
		p, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("encode journal event: %w", err)
		}
		buf = append(buf, frame(p)...)
	}
	tmp := path + ".new"
	f, err := osfile.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if err := writeSync(f, buf); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		return nil, fmt.Errorf("install journal: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, err
	}
	return newJournal(path, f, int64(len(buf)), h.SeqBase+uint64(len(events))), nil
}

// startJournal writes the header into the empty journal file at path (laid
// out by PrepareDir) and opens it for appending. A crash part-way leaves a
// torn header, which ReadHeader reports as no session.
func startJournal(path string, h JournalHeader) (*Journal, error) {
	h.Format = journalFormat
	payload, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode journal header: %w", err)
	}
	f, err := osfile.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	rec := frame(payload)
	if err := writeSync(f, rec); err != nil {
		f.Close()
		return nil, err
	}
	return newJournal(path, f, int64(len(rec)), 0), nil
}

func writeSync(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}

// readHeader reads the header of the journal at path; a missing, empty or
// torn header is ErrNoSession.
func readHeader(path string) (JournalHeader, error) {
	var h JournalHeader
	f, err := osfile.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return h, fmt.Errorf("%s: %w", path, ErrNoSession)
	}
	if err != nil {
		return h, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	payload, _, err := readRecord(bufio.NewReaderSize(f, 4096))
	if err == io.EOF || err == errTorn {
		return h, fmt.Errorf("%s: %w", path, ErrNoSession)
	}
	if err != nil {
		return h, fmt.Errorf("read journal header: %w", err)
	}
	if err := json.Unmarshal(payload, &h); err != nil || h.Format != journalFormat {
		return h, fmt.Errorf("journal %s: not a %s header", path, journalFormat)
	}
	return h, nil
}

// newJournal wraps an open journal file of size bytes whose last event is
// number events.
func newJournal(path string, f *os.File, size int64, events uint64) *Journal {
	j := &Journal{path: path, f: f, size: size, appended: events, synced: events, stop: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// openJournal reads a journal, calling onHeader with its header and the
// offset just past it, then fn for each event in order (numbered from the
// header's SeqBase+1, with the offset just past its record), cuts off a
// torn tail (a record a crash left half-written), and opens the journal
// for appending after the last whole record.
func openJournal(path string, onHeader func(h JournalHeader, end int64) error, fn func(seq uint64, end int64, e *Event) error) (*Journal, JournalHeader, error) {
	var h JournalHeader
	f, err := osfile.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, h, fmt.Errorf("open journal: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<16)
	payload, n, err := readRecord(r)
	if err != nil {
		f.Close()
		return nil, h, fmt.Errorf("read journal header of %s: %w", path, err)
	}
	if err := json.Unmarshal(payload, &h); err != nil || h.Format != journalFormat {
		f.Close()
		return nil, h, fmt.Errorf("journal %s: not a %s header", path, journalFormat)
	}
	if err := onHeader(h, int64(n)); err != nil {
		f.Close()
		return nil, h, err
	}
	size := int64(n)
	seq := h.SeqBase
	for {
		payload, n, err := readRecord(r)
		if err != nil {
			break // io.EOF at a record boundary, or a torn tail
		}
		var e Event
		if err := json.Unmarshal(payload, &e); err != nil {
			// The checksum matched, so this is not a torn write: refuse to
			// guess rather than drop acknowledged events.
			f.Close()
			return nil, h, fmt.Errorf("journal %s record %d is corrupt: %w", path, seq+1, err)
		}
		seq++
		size += int64(n)
		if err := fn(seq, size, &e); err != nil {
			f.Close()
			return nil, h, fmt.Errorf("replay journal record %d: %w", seq, err)
		}
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, h, fmt.Errorf("cut torn journal tail: %w", err)
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return nil, h, fmt.Errorf("seek journal: %w", err)
	}
	return newJournal(path, f, size, seq), h, nil
}

var errTorn = errors.New("torn record")

// readRecord reads one framed record and the number of bytes it took.
func readRecord(r *bufio.Reader) ([]byte, int, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, 0, errTorn
		}
		return nil, 0, err
	}
	n := binary.LittleEndian.Uint32(hdr[0:4])
	if n > maxRecord {
		return nil, 0, errTorn
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, errTorn
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:8]) {
		return nil, 0, errTorn
	}
	return payload, len(hdr) + int(n), nil
}

func frame(payload []byte) []byte {
	rec := make([]byte, 8+len(payload))
	binary.LittleEndian.PutUint32(rec[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:8], crc32.Checksum(payload, crcTable))
	copy(rec[8:], payload)
	return rec
}

// Append writes one event and returns its sequence number. The record has
// reached the operating system (it survives a crash of this process) but is
// not yet durable: call WaitDurable for that. A failed append leaves the
// journal as it was.
func (j *Journal) Append(e *Event) (uint64, error) {
	payload, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encode journal event: %w", err)
	}
	rec := frame(payload)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return 0, err
	}
	if n, err := j.f.Write(rec); err != nil {
		// Cut any partial record so the journal stays a sequence of whole ones.
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				j.err = fmt.Errorf("journal %s is damaged: %w", j.path, terr)
			} else if _, serr := j.f.Seek(j.size, io.SeekStart); serr != nil {
				j.err = fmt.Errorf("journal %s is damaged: %w", j.path, serr)
			}
		}
		return 0, fmt.Errorf("append to journal: %w", err)
	}
	j.size += int64(len(rec))
	j.appended++
	return j.appended, nil
}

func (j *Journal) usable() error {
	if j.closed {
		return &Error{Op: "journal", Code: CodeClosed, Msg: "session is closed"}
	}
	return j.err
}

// WaitDurable returns once the event with sequence number seq, and every
// event before it, is on stable storage. Concurrent waiters share one
// fdatasync (group commit).
func (j *Journal) WaitDurable(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.synced < seq {
		if err := j.usable(); err != nil {
			return err
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		target := j.appended
		j.syncing = true
		f := j.f
		j.mu.Unlock()
		var err error
		if j.beforeSync != nil {
			err = j.beforeSync(func() error { return fdatasync(f) })
		} else {
			err = fdatasync(f)
		}
		j.mu.Lock()
		j.syncing = false
		if err != nil {
			j.err = fmt.Errorf("sync journal %s: %w", j.path, err)
		} else if target > j.synced {
			j.synced = target
		}
		j.cond.Broadcast()
	}
	return nil
}

// Sync makes every appended event durable.
func (j *Journal) Sync() error {
	j.mu.Lock()
	seq := j.appended
	j.mu.Unlock()
	return j.WaitDurable(seq)
}

// Seq returns the sequence number of the last appended event.
func (j *Journal) Seq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.appended
}

// Path returns the journal's file.
func (j *Journal) Path() string { return j.path }

// Size returns the journal's length in bytes.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// flushEvery syncs the journal in the background at the given interval, so
// events acknowledged without waiting are durable within that window.
func (j *Journal) flushEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			_ = j.Sync()
		}
	}
}

// Close syncs and closes the journal.
func (j *Journal) Close() error {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return nil
	}
	err := j.Sync()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	close(j.stop)
	j.cond.Broadcast()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// JournalSnapshots returns the snapshots the session in dir needs, reading
// its journal without opening the session (no tree is loaded, nothing is
// written): the journal's base and initial snapshot and every snapshot
// restored in it. It is what Session.Snapshots returns once the session is
// open, or more (Open compacts away restores before the last one), never
// less; what decides whether a snapshot may be deleted asks it of
// sessions not opened yet. A torn tail ends the scan, as at Open; a
// corrupt record fails it.
func JournalSnapshots(dir string) ([]string, error) {
	path := filepath.Join(dir, journalName)
	f, err := osfile.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoSession)
	}
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	payload, _, err := readRecord(r)
	if err == io.EOF || err == errTorn {
		return nil, fmt.Errorf("%s: %w", path, ErrNoSession)
	}
	if err != nil {
		return nil, fmt.Errorf("read journal header of %s: %w", path, err)
	}
	var h JournalHeader
	if err := json.Unmarshal(payload, &h); err != nil || h.Format != journalFormat {
		return nil, fmt.Errorf("journal %s: not a %s header", path, journalFormat)
	}
	var out []string
	add := func(id string) {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	add(h.Base)
	add(h.Initial)
	marker := []byte(`"` + string(OpRestore) + `"`)
	for seq := h.SeqBase + 1; ; seq++ {
		payload, _, err := readRecord(r)
		if err != nil {
			break // io.EOF at a record boundary, or a torn tail
		}
		if !bytes.Contains(payload, marker) {
			continue // not a restore: no snapshot to hold
		}
		var e Event
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, fmt.Errorf("journal %s record %d is corrupt: %w", path, seq, err)
		}
		if e.Op == OpRestore {
			add(e.Snapshot)
		}
	}
	return out, nil
}

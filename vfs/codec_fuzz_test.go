package vfs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeNode feeds arbitrary bytes to the node decoder: it must never
// panic, and whatever it accepts must encode back to the same bytes.
func FuzzDecodeNode(f *testing.F) {
	f.Add(AppendNode(nil, "a.txt", Node{Kind: KindFile, Mode: 0o644, Size: 3, Version: 1, Ino: 2, Blob: HashOf([]byte("abc"))}))
	f.Add(AppendNode(nil, "ln", Node{Kind: KindSymlink, Target: "../x", Upper: 9}))
	f.Add([]byte{1, 'a', 9, 9})
	xa, _ := XattrsOf(map[string][]byte{"user.a": []byte("v"), "user.b": nil})
	f.Add(AppendNode(nil, "dev", Node{Kind: KindBlockDev, Mode: 0o660 | 1<<23, Uid: 1000, Gid: NoOwner, Nlink: 2, Rdev: 0x801,
		Btime: -1, Mtime: 1 << 40, Ctime: 3, Atime: 4, Xattrs: xa}))
	f.Add(AppendNode(nil, "d", Node{Kind: KindDir, Mode: 0o2755}))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, n, rest, err := DecodeNode(b)
		if err != nil {
			return
		}
		again := AppendNode(nil, name, n)
		require.Equal(t, b[:len(b)-len(rest)], again, "decode then encode must round-trip")
	})
}

// FuzzDecodeNodeV1 feeds arbitrary bytes to the decoder of format 1 (older
// stores): it must never panic, and whatever it accepts must encode back
// to the same bytes in format 1.
func FuzzDecodeNodeV1(f *testing.F) {
	f.Add(appendNodeV1(nil, "a.txt", Node{Kind: KindFile, Mode: 0o644, Size: 3, Version: 1, Ino: 2, Created: 5, Updated: -7, Blob: HashOf([]byte("abc"))}))
	f.Add(appendNodeV1(nil, "ln", Node{Kind: KindSymlink, Target: "../x", Upper: 9}))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, n, rest, err := DecodeNodeV1(b)
		if err != nil {
			return
		}
		again := appendNodeV1(nil, name, n)
		require.Equal(t, b[:len(b)-len(rest)], again, "decode then encode must round-trip")
	})
}

// FuzzJournalReplay opens journals of arbitrary content after a valid
// header: replay must never panic, must stop at the first bad record, and
// the file must afterwards hold exactly the records replayed.
func FuzzJournalReplay(f *testing.F) {
	e1 := eventFrame(&Event{Op: OpMkdir, Path: "a", Time: 1})
	e2 := eventFrame(&Event{Op: OpWrite, Path: "a/f", Time: 2, Blob: HashOf(nil)})
	f.Add(append(e1, e2...))
	at := int64(1)
	e3 := eventFrame(&Event{Op: OpLink, Path: "a/f", To: "a/g", Time: 3, V: 2, Ns: 5})
	e4 := eventFrame(&Event{Op: OpSetXattr, Path: "a/g", Time: 4, V: 2, Name: "user.x", Value: []byte{0, 1}, XattrFlags: XattrCreate})
	e5 := eventFrame(&Event{Op: OpSetTimes, Path: "a/g", Time: 5, V: 2, Times: &Times{Atime: &at, MtimeNow: true}})
	e6 := eventFrame(&Event{Op: OpMknod, Path: "a/p", Time: 6, V: 2, Kind: KindFifo, ExactMode: true, Owner: &Owner{Uid: 1, Gid: 2}})
	f.Add(append(append(append(append(append(e1, e2...), e3...), e4...), e5...), e6...))
	f.Add(append(e1, e2[:7]...))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, journalName)
		j, err := createJournal(path, JournalHeader{Session: "fuzz"}, nil, 0)
		require.NoError(t, err)
		hdrSize := j.Size()
		j.Close()
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = fh.Write(tail)
		require.NoError(t, err)
		fh.Close()

		var replayed int
		j, _, err = openJournal(path, func(JournalHeader, int64) error { return nil }, func(uint64, int64, *Event) error { replayed++; return nil })
		if err != nil {
			return // a checksummed record that is not an event: refused, not guessed
		}
		size := j.Size()
		j.Close()
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, size, fi.Size(), "the torn tail is cut")
		require.LessOrEqual(t, size, hdrSize+int64(len(tail)))
		require.Equal(t, uint64(replayed), j.appended)
	})
}

// eventFrame is e as one journal record.
func eventFrame(e *Event) []byte {
	payload, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return frame(payload)
}

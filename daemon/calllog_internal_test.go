package daemon

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs"
)

// countingPinner counts the pins call logs hold.
type countingPinner struct{ pins atomic.Int64 }

func (p *countingPinner) Put(_ context.Context, r io.Reader, _ bool) (vfs.Hash, int64, func(), error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return vfs.Hash{}, 0, nil, err
	}
	p.pins.Add(1)
	return vfs.HashOf(b), int64(len(b)), func() { p.pins.Add(-1) }, nil
}

func (p *countingPinner) Adopt(context.Context, vfs.Hash) (func(), bool, error) {
	p.pins.Add(1)
	return func() { p.pins.Add(-1) }, true, nil
}

// TestCallLogBounded: past callLogMaxBytes the oldest records go (and
// their blobs' pins), the numbering goes on, and a torn last record is cut
// off at the next open.
func TestCallLogBounded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	pins := &countingPinner{}
	l, err := openCallLog(ctx, path, pins)
	require.NoError(t, err)
	params := []byte(`{"text":"` + strings.Repeat("p", api.CallInlineBytes) + `"}`) // just over: a blob
	result := []byte(`{"text":"` + strings.Repeat("r", api.CallInlineBytes-100) + `"}`)
	const n = 1200
	for i := 0; i < n; i++ {
		got, err := l.append(ctx, api.Call{Tool: "t", Status: "ok"}, params, result, nil)
		require.NoError(t, err)
		require.Equal(t, uint64(i+1), got)
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), int64(callLogMaxBytes))
	}
	list, err := l.list(0, callPageMax)
	require.NoError(t, err)
	require.Greater(t, list.Oldest, uint64(1), "old records were dropped")
	require.Equal(t, uint64(n), list.Calls[len(list.Calls)-1].N)
	require.Equal(t, int64(len(l.recs)), pins.pins.Load(), "one pin per record's params blob, none for dropped records")
	require.NoError(t, l.close(false))
	require.Zero(t, pins.pins.Load())

	// A torn record (a crash mid-write) is dropped at open.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"n":99999,"tool":"cut sh`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	l, err = openCallLog(ctx, path, pins)
	require.NoError(t, err)
	require.Equal(t, uint64(n), l.count())
	got, err := l.append(ctx, api.Call{Tool: "t"}, []byte(`{}`), []byte(`{}`), nil)
	require.NoError(t, err)
	require.Equal(t, uint64(n+1), got)
	require.NoError(t, l.close(true))
	require.NoFileExists(t, path)
}

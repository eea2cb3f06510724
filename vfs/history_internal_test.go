package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHistoryCheckpointsStayBounded(t *testing.T) {
	var h history
	base := EmptyTree(0)
	h.start(10, 100, base)
	for seq := uint64(11); seq < 10+histEvery*histMaxCheckpoints*3; seq++ {
		h.note(seq, int64(seq)*10, &Event{Op: OpWrite}, base)
		require.LessOrEqual(t, len(h.cps), histMaxCheckpoints+1)
	}
	require.Equal(t, uint64(10), h.cps[0].seq, "the base checkpoint stays")
	for i := 1; i < len(h.cps); i++ {
		require.Less(t, h.cps[i-1].seq, h.cps[i].seq)
	}
	for _, seq := range []uint64{10, 11, 500, 5000, 90000} {
		cp := h.at(seq)
		require.LessOrEqual(t, cp.seq, seq)
	}
	require.Greater(t, h.every, uint64(histEvery), "the spacing doubled")
	// A restore always gets a checkpoint: a replay never crosses one it
	// would have to load.
	last := h.cps[len(h.cps)-1].seq
	h.note(last+1, 0, &Event{Op: OpRestore}, base)
	require.Equal(t, last+1, h.cps[len(h.cps)-1].seq)
}

package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// TestRootDirCosts measures, when $ROOTDIR_RATIOS is set, what a
// weakincentives session's directory on disk costs, interleaving rounds so
// that a noisy machine affects every variant alike, and logs medians and
// ratios:
//
//	ROOTDIR_RATIOS=1 go test ./httpapi/ -run TestRootDirCosts -v -count 1
//
// A session's life (create, write 3 files, read the state, close) with
// root_path a FUSE mount, with root_path a copy, and, as the baseline, a
// session of a contract without a directory (vfsd's, the same 3 writes);
// then one read of the state of a session of 1,000 files, mount against
// copy (the copy written out again because the session changed).
func TestRootDirCosts(t *testing.T) {
	if os.Getenv("ROOTDIR_RATIOS") == "" {
		t.Skip("set ROOTDIR_RATIOS=1 to measure")
	}
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	ctx := context.Background()
	fuse := start(t, newConfig(t))
	cfg := newConfig(t)
	cfg.RootDirs = daemon.RootDirsCopy
	cp := start(t, cfg)

	n := 0
	life := func(s *server, contract string) func() {
		return func() {
			n++
			id := fmt.Sprintf("s%d", n)
			_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: id, Contract: contract})
			require.NoError(t, err)
			for i := range 3 {
				if contract == "weakincentives" {
					call(t, s.c, id, "write_file", fmt.Sprintf(`{"path":"f%d.txt","content":"x"}`, i), "ok")
				} else {
					call(t, s.c, id, "write_file", fmt.Sprintf(`{"path":"f%d.txt","inline_text":"x"}`, i), "ok")
				}
			}
			if contract == "weakincentives" {
				_, err = s.c.ContractState(ctx, id)
				require.NoError(t, err)
			}
			require.NoError(t, s.c.CloseSessionPurge(ctx, id))
		}
	}
	const rounds = 31
	measure := func(name string, variants map[string]func(), order []string) {
		times := map[string][]time.Duration{}
		for range rounds {
			for _, v := range order {
				start := time.Now()
				variants[v]()
				times[v] = append(times[v], time.Since(start))
			}
		}
		base := order[len(order)-1]
		slices.Sort(times[base])
		bm := times[base][rounds/2]
		for _, v := range order {
			slices.Sort(times[v])
			m := times[v][rounds/2]
			t.Logf("%s: %-6s median %8v (min %8v), %.2fx %s", name, v, m.Round(time.Microsecond), times[v][0].Round(time.Microsecond),
				float64(m)/float64(bm), base)
		}
	}
	measure("session life", map[string]func(){
		"fuse": life(fuse, "weakincentives"), "copy": life(cp, "weakincentives"), "none": life(fuse, "vfsd"),
	}, []string{"fuse", "copy", "none"})

	big := func(s *server) string {
		_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "big", Contract: "weakincentives"})
		require.NoError(t, err)
		for i := range 1000 {
			call(t, s.c, "big", "write_file", fmt.Sprintf(`{"path":"d%d/f%d.txt","content":"%0100d"}`, i%10, i, i), "ok")
		}
		return "big"
	}
	state := func(s *server, id string) func() {
		k := 0
		return func() {
			k++ // a change, so that a copy is written out again
			call(t, s.c, id, "write_file", fmt.Sprintf(`{"path":"touch.txt","content":"%d","mode":"%s"}`, k, map[bool]string{true: "create", false: "overwrite"}[k == 1]), "ok")
			_, err := s.c.ContractState(ctx, id)
			require.NoError(t, err)
		}
	}
	measure("state of 1,000 files after a change", map[string]func(){
		"copy": state(cp, big(cp)), "fuse": state(fuse, big(fuse)),
	}, []string{"copy", "fuse"})
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for vfsd in `bench reopen-read`,
// which the cow benchmark runs in a fresh process, and in `bench
// round-trip`, the mount benchmark's round_trip step.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == "reopen-read" {
		fs := flag.NewFlagSet("reopen-read", flag.ExitOnError)
		store := fs.String("store", "", "")
		sessions := fs.String("sessions", "", "")
		session := fs.String("session", "", "")
		path := fs.String("path", "", "")
		_ = fs.Parse(os.Args[3:])
		res, err := ReopenRead(context.Background(), *store, *sessions, *session, *path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == "round-trip" {
		fs := flag.NewFlagSet("round-trip", flag.ExitOnError)
		path := fs.String("path", "", "")
		n := fs.Int("n", 0, "")
		_ = fs.Parse(os.Args[3:])
		if err := RoundTrip(*path, *n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCowReopenSmoke runs the cow benchmark with the reopen figures: the
// fresh processes open the repository and read the file.
func TestCowReopenSmoke(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	err = Cow(context.Background(), CowOptions{Sizes: []int{80}, SizeKB: 1, Dir: t.TempDir(), Repeats: 1, Self: self}, &out)
	require.NoError(t, err)
	var res CowResult
	require.NoError(t, json.NewDecoder(&out).Decode(&res))
	for name, v := range map[string]float64{
		"reopen": res.ReopenReadMs, "reopen 100": res.ReopenRead100Ms,
		"repo": res.ReopenRepoMs, "repo 100": res.ReopenRepo100Ms,
	} {
		require.Positive(t, v, name)
	}
}

//go:build linux

package csi_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// csiSanity finds the csi-sanity binary: $VFSD_CSI_SANITY, on PATH, or in
// GOPATH/bin (where .ci/run's go install puts it).
func csiSanity(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VFSD_CSI_SANITY"); p != "" {
		return p
	}
	if p, err := exec.LookPath("csi-sanity"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "csi-sanity")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "csi-sanity is not installed: go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0 (.ci/run does)"
	if os.Getenv("VFSD_REQUIRE_CSI_SANITY") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// junit is the part of a JUnit report csi-sanity writes that the test
// reads.
type junit struct {
	Cases []struct {
		Name    string `xml:"name,attr"`
		Skipped *struct {
			Message string `xml:"message,attr"`
		} `xml:"skipped"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Error *struct {
			Message string `xml:"message,attr"`
		} `xml:"error"`
	} `xml:"testsuite>testcase"`
}

// TestSanity runs the CSI community's conformance suite, csi-sanity,
// against the driver with each mount backend: every spec that runs must
// pass. What it skips is what the driver does not offer (it says so in
// GetPluginCapabilities, ControllerGetCapabilities and
// NodeGetCapabilities): attach (ControllerPublishVolume: nothing to
// attach), staging (NodeStageVolume: each pod's target is mounted
// directly), expansion and modification (a volume's size is its quota),
// GetCapacity, volume health and group snapshots; the test logs each
// reason.
func TestSanity(t *testing.T) {
	bin := csiSanity(t)
	for _, backend := range []string{api.BackendFUSE, api.BackendOverlay} {
		t.Run(backend, func(t *testing.T) {
			if backend == api.BackendOverlay {
				requireOverlay(t)
			}
			e := newEnv(t, envOpts{backend: backend})
			report := filepath.Join(t.TempDir(), "junit.xml")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin,
				"--csi.endpoint", e.endpoint,
				"--csi.mountdir", filepath.Join(e.kubelet, "target"),
				"--csi.stagingdir", filepath.Join(e.kubelet, "staging"),
				"--csi.junitfile", report,
				"--ginkgo.no-color", "--ginkgo.timeout", "150s")
			cmd.Dir = t.TempDir()
			out, runErr := cmd.CombinedOutput()
			b, err := os.ReadFile(report)
			require.NoError(t, err, "csi-sanity wrote no report (%v):\n%s", runErr, out)
			var r junit
			require.NoError(t, xml.Unmarshal(b, &r))
			var failed []string
			passed, skipped := 0, map[string]int{}
			for _, c := range r.Cases {
				switch {
				case c.Failure != nil:
					failed = append(failed, fmt.Sprintf("%s: %s\n%s", c.Name, c.Failure.Message, c.Failure.Text))
				case c.Error != nil:
					failed = append(failed, fmt.Sprintf("%s: %s", c.Name, c.Error.Message))
				case c.Skipped != nil:
					skipped[strings.TrimPrefix(c.Skipped.Message, "skipped - ")]++
				default:
					passed++
				}
			}
			require.Empty(t, failed, "csi-sanity failures:\n%s", strings.Join(failed, "\n\n"))
			require.NoError(t, runErr, "csi-sanity:\n%s", out)
			require.GreaterOrEqual(t, passed, 57, "csi-sanity ran too little:\n%s", out)
			var reasons []string
			for m, n := range skipped {
				reasons = append(reasons, fmt.Sprintf("%d × %s", n, m))
			}
			sort.Strings(reasons)
			t.Logf("csi-sanity (%s): %d passed, 0 failed; skipped: %s", backend, passed, strings.Join(reasons, "; "))
		})
	}
}

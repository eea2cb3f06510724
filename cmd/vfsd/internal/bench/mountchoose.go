//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// More targets of the mount benchmark.
const (
	// targetKernelOverlay is kernel overlayfs over an empty lower layer:
	// what a container engine gives a container's writable layer.
	targetKernelOverlay = "kernel_overlayfs"
	// targetVfsdOverlay is vfsd's kernel overlay backend (OverlayBackend).
	targetVfsdOverlay = "vfsd_overlay"
)

// OverlayBackend mounts session s of repo at dir with vfsd's kernel
// overlay backend, its state in OverlayStateDir beside dir, and returns
// what unmounts it (ingesting what changed). It is set by the program that
// links the backend in; nil leaves the vfsd_overlay target out.
var OverlayBackend func(ctx context.Context, repo *snapshot.Repo, s *vfs.Session, dir string) (unmount func() error, err error)

// OverlayStateDir is the name of the directory beside the mount point
// that holds an OverlayBackend mount's state: its upper directory is
// OverlayStateDir/upper.
const OverlayStateDir = "overlay-state"

// OverlayBackendUsable, when set, says why the overlay backend cannot
// mount here, or nil.
var OverlayBackendUsable func() error

// knownTargets are every target, in the order a round runs them.
var knownTargets = []string{targetNative, targetVfsd, targetVfsdOverlay, targetLoopback, targetLoopNoPT, targetOverlayfs, targetKernelOverlay}

// chooseTargets returns the targets to run: the ones asked for (all when
// none), less the ones that cannot run here, which land in skipped with
// the reason. Every A/B variant of vfsd's FUSE mount adds a target.
func (w *mountWorkload) chooseTargets(ctx context.Context, skipped map[string]string) ([]string, error) {
	want := w.opts.Targets
	for _, t := range want {
		if !slices.Contains(knownTargets, t) {
			return nil, fmt.Errorf("unknown target %q; use some of %s", t, strings.Join(knownTargets, ", "))
		}
	}
	if len(want) == 0 {
		want = knownTargets
	}
	for _, must := range []string{targetNative, targetVfsd, targetLoopback, targetLoopNoPT} {
		if !slices.Contains(want, must) {
			want = append(want, must) // every ratio is against these
		}
	}
	var out []string
	for _, name := range knownTargets {
		if !slices.Contains(want, name) {
			continue
		}
		var reason error
		switch name {
		case targetOverlayfs:
			reason = w.overlayfsWorks(ctx)
		case targetKernelOverlay:
			reason = w.probe(ctx, name)
		case targetVfsdOverlay:
			switch {
			case OverlayBackend == nil:
				reason = fmt.Errorf("this binary has no overlay backend linked in")
			case OverlayBackendUsable != nil:
				reason = OverlayBackendUsable()
			}
		}
		if reason != nil {
			skipped[name] = reason.Error()
			fmt.Fprintf(w.opts.Log, "%s: left out: %v\n", name, reason)
			continue
		}
		out = append(out, name)
		if name == targetVfsd {
			for _, v := range w.opts.Variants {
				out = append(out, targetVfsd+"_"+v.Name)
			}
		}
	}
	return out, nil
}

// probe sets target name up once and tears it down: the reason it cannot
// run here, or nil.
func (w *mountWorkload) probe(ctx context.Context, name string) error {
	t, err := w.newTarget(ctx, name, -1)
	if cerr := t.close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// chooseSteps sets the steps to run: the ones asked for (all when none);
// the container steps need their fixture, made here, and are left out
// with the reason when they cannot run.
func (w *mountWorkload) chooseSteps(ctx context.Context, skipped map[string]string) error {
	all := append(slices.Clone(mountSteps), containerSteps...)
	all = append(all, stepRoundTrip)
	want := w.opts.Steps
	for _, s := range want {
		if !slices.Contains(all, s) {
			return fmt.Errorf("unknown step %q; use some of %s", s, strings.Join(all, ", "))
		}
	}
	if len(want) == 0 {
		want = slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == stepRoundTrip })
	}
	// A step runs on what the steps before it made: bring those in too.
	for _, s := range slices.Clone(want) {
		for _, dep := range stepNeeds[s] {
			if !slices.Contains(want, dep) {
				want = append(want, dep)
			}
		}
	}
	needContainer := slices.ContainsFunc(want, func(s string) bool { return slices.Contains(containerSteps, s) })
	if needContainer {
		fmt.Fprintf(w.opts.Log, "writing the container fixture (a Go module, a node_modules tarball) and warming the Go build cache...\n")
		goPkgs, npmPkgs := w.opts.GoPackages, w.opts.NpmPackages
		if goPkgs <= 0 {
			goPkgs = goPackages
		}
		if npmPkgs <= 0 {
			npmPkgs = npmPackages
		}
		f, err := newContainerFixture(ctx, w.work, goPkgs, npmPkgs)
		if err != nil {
			return fmt.Errorf("container steps: %w", err)
		}
		if f.skip != "" {
			skipped["container_steps"] = f.skip
			fmt.Fprintf(w.opts.Log, "container steps: left out: %s\n", f.skip)
			want = slices.DeleteFunc(slices.Clone(want), func(s string) bool { return slices.Contains(containerSteps, s) })
		} else {
			w.container = f
		}
	}
	// Keep the workload's order whatever order they were asked in.
	for _, s := range all {
		if slices.Contains(want, s) {
			w.stepNames = append(w.stepNames, s)
		}
	}
	if len(w.stepNames) == 0 {
		return fmt.Errorf("no step can run")
	}
	return nil
}

// stepNeeds lists the steps whose results a step works on.
var stepNeeds = map[string][]string{
	stepWalkStat: {stepUntar}, stepGrep: {stepUntar}, stepReadAll: {stepUntar}, stepSedI: {stepUntar}, stepRmRf: {stepUntar},
	stepSeqRead:   {stepSeqWrite},
	stepGitStatus: {stepGitClone}, stepGoBuild: {stepGitClone}, stepRgRepo: {stepGitClone}, stepGitCommit: {stepGitClone},
	stepDu: {stepNpmUntar}, stepRequire: {stepNpmUntar}, stepRmRfAgents: {stepGitClone, stepNpmUntar},
}

// variant returns the options of vfsd target name.
func (w *mountWorkload) variant(name string) (mount.Options, bool) {
	if name == targetVfsd {
		return mount.Options{}, true
	}
	for _, v := range w.opts.Variants {
		if name == targetVfsd+"_"+v.Name {
			return v.Options, true
		}
	}
	return mount.Options{}, false
}

// vfsdOptionsNote says how the vfsd targets mounted.
func (w *mountWorkload) vfsdOptionsNote() string {
	note := "mount.Options{} (defaults)"
	for _, v := range w.opts.Variants {
		b, _ := json.Marshal(v.Options)
		note += fmt.Sprintf("; vfsd_%s: %s", v.Name, b)
	}
	return note
}

// mountKernelOverlay mounts kernel overlayfs of an empty lower layer at
// mnt.
func mountKernelOverlay(lower, upper, work, mnt string) (func() error, error) {
	opt := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := unix.Mount("overlay", mnt, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opt); err != nil {
		hint := ""
		if os.Geteuid() != 0 {
			hint = " (needs root)"
		}
		return nil, fmt.Errorf("mount -t overlay -o %s %s: %w%s", opt, mnt, err, hint)
	}
	return func() error {
		if err := unix.Unmount(mnt, 0); err != nil {
			if derr := unix.Unmount(mnt, unix.MNT_DETACH); derr != nil {
				return fmt.Errorf("umount %s: %w", mnt, err)
			}
		}
		return nil
	}, nil
}

// orderedObject is a JSON object that keeps its fields' order.
type orderedObject []field

type field struct {
	k string
	v any
}

// MarshalJSON writes the fields in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

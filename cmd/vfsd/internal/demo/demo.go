// Package demo is `vfsd demo`: a tour of vfsd on a temporary directory,
// in-process, that needs nothing but Go (and uses FUSE when it can). It
// stages a sample host folder with include/exclude globs, runs every agent
// tool, snapshots, forks, edits the fork, diffs, restores, and mounts the
// fork; then, through a daemon run in-process and the Go client, it shows a
// session's log, rewinds and undoes the rewind, and rebases on a changed
// host folder, printing what happened at each step.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// Options configure the demo.
type Options struct {
	// Dir is where the demo works; a new temporary directory, removed
	// afterwards, when empty.
	Dir string
	// NoMount skips the FUSE step.
	NoMount bool
}

// sample is the host folder the demo stages: a small Go project with the
// usual clutter an agent should not see.
var sample = map[string]string{
	"README.md":              "# greeter\n\nSays hello.\n",
	"go.mod":                 "module example.com/greeter\n\ngo 1.22\n",
	"main.go":                "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greeting(\"world\"))\n}\n",
	"greet.go":               "package main\n\n// greeting returns the greeting for name.\nfunc greeting(name string) string {\n\treturn \"Hello, \" + name\n}\n",
	"docs/notes.md":          "Notes: keep the greeting short.\n",
	"node_modules/left/x.js": "module.exports = 1\n",
	"build/greeter.bin":      "\x7fELF not really\n",
	".env":                   "TOKEN=do-not-import\n",
}

// Run runs the demo, printing to out.
func Run(ctx context.Context, opts Options, out io.Writer) error {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "vfsd-demo-")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	d := &tour{ctx: ctx, out: out, dir: dir}
	return d.run(opts)
}

// tour carries the demo's state from step to step.
type tour struct {
	ctx  context.Context
	out  io.Writer
	dir  string
	step int
	repo *snapshot.Repo
	s    *vfs.Session
	ts   *tools.Toolset
}

func (d *tour) section(format string, args ...any) {
	d.step++
	fmt.Fprintf(d.out, "\n%d. %s\n", d.step, fmt.Sprintf(format, args...))
}

func (d *tour) say(format string, args ...any) {
	fmt.Fprintf(d.out, "%s\n", strings.TrimRight("   "+fmt.Sprintf(format, args...), " "))
}

func (d *tour) run(opts Options) error {
	host := filepath.Join(d.dir, "host", "greeter")
	if err := writeTree(host, sample); err != nil {
		return err
	}
	var err error
	if d.repo, err = snapshot.OpenLocalRepo(d.ctx, d.dir, snapshot.RepoOptions{}); err != nil {
		return err
	}
	defer d.repo.Close()
	fmt.Fprintf(d.out, "vfsd demo — working in %s\n", d.dir)

	if err := d.stage(host); err != nil {
		return err
	}
	if err := d.tools(); err != nil {
		return err
	}
	fork, snap, err := d.snapshotFork()
	if err != nil {
		return err
	}
	if err := d.diffRestore(fork, snap); err != nil {
		return err
	}
	if !opts.NoMount {
		d.mount(fork)
	}
	if err := d.history(host); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nDone. Every step above ran on real sessions in %s.\n", d.dir)
	return nil
}

// stage imports the sample folder with include/exclude globs.
func (d *tour) stage(host string) error {
	d.section("Stage %s into a new session (exclude node_modules/**, build/**, .env)", host)
	im, err := hostmount.New(hostmount.Options{Roots: []string{filepath.Dir(host)}})
	if err != nil {
		return err
	}
	defer im.Close()
	s, rep, err := im.Stage(d.ctx, d.repo, snapshot.SessionOptions{ID: "demo"}, []hostmount.Mount{{
		HostPath: host, MountPath: "/",
		Exclude: []string{"node_modules/**", "build/**", ".env"},
	}}, nil)
	if err != nil {
		return err
	}
	d.s = s
	d.say("imported %d files (%d bytes) in %.1f ms; the excluded paths never entered the session", rep.Files, rep.Bytes, rep.TotalMs)
	d.ts, err = tools.New(s, tools.Options{Blobs: d.repo.Blobs()})
	return err
}

// call runs a tool and prints its summary (and, if show, its text).
func (d *tour) call(name, params string, show bool) (map[string]any, error) {
	r := d.ts.Call(d.ctx, d.s.ID(), name, json.RawMessage(params))
	var m map[string]any
	if err := json.Unmarshal(r.JSON(), &m); err != nil {
		return nil, err
	}
	d.say("%-15s %s", name, m["summary_text"])
	if show {
		text := strings.TrimPrefix(r.Text, fmt.Sprint(m["summary_text"])+"\n")
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			d.say("    │ %s", line)
		}
	}
	if !r.OK() && name != "edit_file" {
		return m, fmt.Errorf("demo: %s failed: %s", name, r.JSON())
	}
	return m, nil
}

// tools runs each agent tool once.
func (d *tour) tools() error {
	d.section("Agent tools on the session (receipts' summary_text shown)")
	steps := []struct {
		name, params string
		show         bool
	}{
		{"list_directory", `{"depth":2}`, true},
		{"read_file", `{"path":"greet.go","line_numbers":true}`, true},
		{"grep", `{"pattern":"greeting\\(","output":"content"}`, true},
		{"glob", `{"pattern":"**/*.go","sort":"path"}`, false},
		{"edit_file", `{"path":"greet.go","old_string":"\"Hello, \" + name","new_string":"\"Hello, \" + name + \"!\""}`, true},
		{"edit_file", `{"path":"greet.go","old_string":"Goodbye","new_string":"x"}`, false},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: greet_test.go\n+package main\n+\n+import \"testing\"\n+\n+func TestGreeting(t *testing.T) {\n+\tif greeting(\"a\") != \"Hello, a!\" {\n+\t\tt.Fatal(greeting(\"a\"))\n+\t}\n+}\n*** Update File: README.md\n@@\n-Says hello.\n+Says hello, loudly.\n*** End Patch"}`, false},
		{"write_file", `{"path":"scratch/todo.txt","inline_text":"remember the tests\n"}`, false},
		{"stat", `{"path":"greet.go"}`, false},
		{"exists", `{"path":"node_modules"}`, false},
		{"mkdir", `{"path":"cmd/greeter"}`, false},
		{"rename", `{"from":"main.go","to":"cmd/greeter/main.go"}`, false},
		{"delete_file", `{"path":"scratch","recursive":true}`, false},
	}
	for _, st := range steps {
		if _, err := d.call(st.name, st.params, st.show); err != nil {
			return err
		}
	}
	d.say("(the second edit_file failed on purpose: not_found, with the closest region, and changed nothing)")
	return nil
}

// snapshotFork snapshots the session, forks it and edits the fork.
func (d *tour) snapshotFork() (*vfs.Session, *snapshot.Snapshot, error) {
	d.section("Snapshot the session, fork it, and change the fork")
	snap, err := d.repo.Snapshot(d.ctx, d.s, "after the tools")
	if err != nil {
		return nil, nil, err
	}
	d.say("snapshot %s: %d files", snap.ID, snap.Tree.Files())
	fork, err := d.repo.Fork(d.ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "demo-fork"})
	if err != nil {
		return nil, nil, err
	}
	ft, err := tools.New(fork, tools.Options{Blobs: d.repo.Blobs()})
	if err != nil {
		return nil, nil, err
	}
	r := ft.Call(d.ctx, fork.ID(), "edit_file", json.RawMessage(`{"path":"docs/notes.md","old_string":"short","new_string":"short and kind"}`))
	if !r.OK() {
		return nil, nil, fmt.Errorf("demo: edit the fork: %s", r.JSON())
	}
	d.say("fork %s: edited docs/notes.md; the original session is untouched", fork.ID())
	// Change the original too, so restore has something to undo.
	if _, err := d.call("write_file", `{"path":"greet.go","inline_text":"package main\n// oops\n"}`, false); err != nil {
		return nil, nil, err
	}
	return fork, snap, nil
}

// diffRestore diffs the fork against the snapshot and restores the
// original session.
func (d *tour) diffRestore(fork *vfs.Session, snap *snapshot.Snapshot) error {
	d.section("Diff the fork against the snapshot, then restore the original session")
	diff, err := d.repo.Diff(d.ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.Source{Session: fork}, snapshot.DiffOptions{Text: true})
	if err != nil {
		return err
	}
	d.say("%d added, %d modified, %d deleted", diff.Added, diff.Modified, diff.Deleted)
	for _, e := range diff.Entries {
		for _, line := range strings.Split(strings.TrimRight(e.Text, "\n"), "\n") {
			if line != "" {
				d.say("    │ %s", line)
			}
		}
	}
	before, _, err := d.s.ReadFile(d.ctx, vfs.MustPath("greet.go"))
	if err != nil {
		return err
	}
	if err := d.repo.Restore(d.ctx, d.s, snap.ID); err != nil {
		return err
	}
	after, _, err := d.s.ReadFile(d.ctx, vfs.MustPath("greet.go"))
	if err != nil {
		return err
	}
	d.say("greet.go before restore: %q", firstLine(before))
	d.say("greet.go after restore:  %q (restore is O(1): the tree is swapped, nothing copied)", firstLine(after[strings.Index(string(after), "func"):]))
	return nil
}

// mount serves the fork through FUSE and lists it like any program would.
func (d *tour) mount(fork *vfs.Session) {
	d.section("Mount the fork through FUSE and read it with ordinary file calls")
	mnt := filepath.Join(d.dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		d.say("skipped: %v", err)
		return
	}
	m, err := mount.New(fork, mnt, mount.Options{})
	if err != nil {
		d.say("skipped: %v (FUSE needs /dev/fuse and root or fusermount3)", err)
		return
	}
	defer m.Unmount()
	var names []string
	_ = filepath.WalkDir(mnt, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(mnt, p)
			names = append(names, rel)
		}
		return nil
	})
	sort.Strings(names)
	d.say("%s holds: %s", mnt, strings.Join(names, ", "))
	data, err := os.ReadFile(filepath.Join(mnt, "docs", "notes.md"))
	if err != nil {
		d.say("read failed: %v", err)
		return
	}
	d.say("docs/notes.md through the mount: %q", strings.TrimSpace(string(data)))
	if err := os.WriteFile(filepath.Join(mnt, "from-the-mount.txt"), []byte("written by a program\n"), 0o644); err == nil {
		n, err := fork.Stat(d.ctx, vfs.MustPath("from-the-mount.txt"))
		if err == nil {
			d.say("a program wrote from-the-mount.txt; the session sees it (version %d)", n.Version)
		}
	}
}

func writeTree(root string, files map[string]string) error {
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

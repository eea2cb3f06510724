package aos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/contract"
)

// Name is the contract's name.
const Name = "aos"

// The effects, in the order a model sees them: the six of the minimal set,
// then the three "optional but recommended" ones (000 §"Proposed Effect
// Family"; the completion notes ship all nine).
var effects = []string{"read_file", "write_file", "edit_file", "apply_patch", "grep", "glob", "stat", "exists", "list_dir"}

// Effect namespaces: host.fs.* (000) and process.fs.* (001).
const (
	hostPrefix    = "host.fs."
	processPrefix = "process.fs."
)

// vfsdOps maps an effect to the vfsd operation a policy allows or forbids.
var vfsdOps = map[string]string{
	"read_file": "read_file", "write_file": "write_file", "edit_file": "edit_file", "apply_patch": "apply_patch",
	"grep": "grep", "glob": "glob", "stat": "stat", "exists": "exists", "list_dir": "list_directory",
}

// Contract is the AOS host.fs.* / process.fs.* contract.
type Contract struct {
	journal Journal
}

// New returns the contract with its own in-memory journal (64 sessions of
// 4096 calls).
func New() *Contract { return &Contract{journal: NewMemJournal(64, 4096)} }

func init() { contract.Register(New()) }

// Name implements contract.Contract.
func (c *Contract) Name() string { return Name }

// Journal returns the contract's own journal (used where the context
// carries none).
func (c *Contract) Journal() Journal { return c.journal }

// Aliases maps every other name the contract answers to the listed tool
// it is: the process.fs.* names (001) and the SDK tool names of the
// document's Tool Mapping ("read_file -> host.fs.read_file"), which also
// suit providers whose tool names may not contain dots.
func (c *Contract) Aliases() map[string]string {
	out := map[string]string{}
	for _, e := range effects {
		out[processPrefix+e] = hostPrefix + e
		out[e] = hostPrefix + e
	}
	return out
}

// resolve splits a tool name into its effect and the canonical effect name
// it journals as.
func resolve(tool string) (effect, canonical string, ok bool) {
	for _, prefix := range []string{hostPrefix, processPrefix, ""} {
		if e, found := strings.CutPrefix(tool, prefix); found {
			if _, known := vfsdOps[e]; known {
				if prefix == "" {
					prefix = hostPrefix
				}
				return e, prefix + e, true
			}
		}
	}
	return "", "", false
}

// Call implements contract.Contract.
func (c *Contract) Call(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	return contract.Guard(func() contract.Result { return c.dispatch(ctx, env, tool, params) },
		func(r any) contract.Result {
			return result(&ErrorReceipt{Status: "error", ErrorCode: "internal"}, "error",
				fmt.Sprintf("internal error in %s: %v; the session is unchanged", tool, r))
		})
}

// dispatch is Call's body, run under contract.Guard.
func (c *Contract) dispatch(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	effect, canonical, ok := resolve(tool)
	if !ok {
		return result(&ErrorReceipt{Status: "error", ErrorCode: "unknown_effect"}, "error",
			fmt.Sprintf("no effect named %q; use one of host.fs.{%s} (or process.fs.*)", tool, strings.Join(effects, ",")))
	}
	j := c.journal
	if dj, ok := ctx.Value(journalKey).(Journal); ok && dj != nil {
		j = dj
	}
	intent := IntentHash(canonical, params)
	if r := replayOf(ctx); r != nil {
		return c.replay(ctx, env, j, r, intent)
	}
	res, refs := c.run(ctx, env, effect, params)
	_ = j.Append(ctx, env.SessionID, Entry{Effect: canonical, Intent: intent, Params: append(json.RawMessage(nil), params...),
		Receipt: res.Body, Status: res.Status, Text: res.Text, BlobRefs: refs})
	return res
}

// replay returns the journaled receipt of the call, running nothing.
func (c *Contract) replay(ctx context.Context, env *contract.Env, j Journal, r *Replay, intent string) contract.Result {
	n := r.next(intent)
	e, ok, err := j.Lookup(ctx, env.SessionID, intent, n)
	if err != nil || !ok {
		return result(&ErrorReceipt{Status: "error", ErrorCode: "replay_receipt_missing"}, "error",
			fmt.Sprintf("replay: no journaled receipt for call %d of this intent in session %s; replay is deterministic and never re-runs a filesystem action", n+1, env.SessionID))
	}
	for _, ref := range e.BlobRefs {
		if !blobExists(ctx, env, ref) {
			return result(&ErrorReceipt{Status: "error", ErrorCode: "replay_missing_cas"}, "error",
				fmt.Sprintf("replay: the journaled receipt depends on blob %s, which is missing from the store (a deterministic hard fault)", ref))
		}
	}
	return contract.Result{Body: e.Receipt, Text: e.Text, Status: e.Status, IsError: e.Status != "ok"}
}

// result renders a receipt.
func result(body any, status, text string) contract.Result {
	b, err := json.Marshal(body)
	if err != nil {
		b = []byte(`{"status":"error","error_code":"internal"}`)
		status = "error"
	}
	return contract.Result{Body: b, Text: text, Status: status, IsError: status != "ok"}
}

// Tools implements contract.Contract: the host.fs.* effects (Call also
// answers Aliases).
func (c *Contract) Tools() []contract.Tool {
	out := make([]contract.Tool, 0, len(effects))
	for _, e := range effects {
		s := schemas[e]
		out = append(out, contract.Tool{Name: hostPrefix + e, Title: s.title, Description: s.desc,
			InputSchema: json.RawMessage(s.params), Annotations: s.ann})
	}
	return out
}

// Prompt implements contract.Contract.
func (c *Contract) Prompt() string { return prompt }

const prompt = `## Workspace files (AOS host.fs effects)

You work on a repository through the host.fs.* effects, all scoped to this session (session_id may be left out: the call is bound to its session).

- Read with host.fs.read_file (offset_bytes/max_bytes for a byte range). Small text comes back as content.inline_text.text; large content as content.blob (a blob_ref and a preview).
- Change files with host.fs.edit_file (old_string must identify one place; set replace_all to change every match; whitespace and typographic quotes/dashes are forgiven when nothing matches exactly) or host.fs.apply_patch (a V4A patch in patch.inline_text.text; dry_run checks it without writing).
- Create or replace whole files with host.fs.write_file: content {"inline_text":{"text":"..."}}; mode create_new refuses to replace (status conflict); create_parents makes missing directories.
- Find code with host.fs.grep (regex, path:line:text lines, match_count) and host.fs.glob (paths newest first, count).
- Every receipt has a status: ok, or what went wrong (not_found, ambiguous, conflict, forbidden, parse_error, reject, invalid_regex, invalid_pattern, error with error_code). A failed change leaves the files as they were.
`

package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestCheckpointTools: an agent whose policy enables checkpoints saves,
// lists, compares and undoes its own work, over HTTP with its session
// token and over MCP; the tools are absent and refused without the
// policy's consent, every use is in the call log and the history, and
// the session's snapshot quota bounds them.
func TestCheckpointTools(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()
	admin := s.tcpClient(s.d.AdminToken())

	off, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "off"})
	require.NoError(t, err)
	offTok := s.tcpClient(off.Token)
	tl, err := offTok.Tools(ctx, "off", "")
	require.NoError(t, err)
	require.NotContains(t, string(tl.Tools), `"checkpoint"`, "not listed without the policy's consent")
	r := call(t, offTok, "off", "checkpoint", `{"label":"x"}`, "forbidden")
	require.Equal(t, "forbidden", r["error_code"])
	require.Contains(t, r["summary_text"], "checkpoints is true")

	on, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "on",
		PolicyObject: json.RawMessage(`{"base":"default","checkpoints":true}`),
		Quota:        &api.Quota{MaxSnapshots: 2}})
	require.NoError(t, err)
	agent := s.tcpClient(on.Token)
	tl, err = agent.Tools(ctx, "on", "")
	require.NoError(t, err)
	for _, name := range []string{"checkpoint", "list_checkpoints", "diff_since", "undo_to"} {
		require.Contains(t, string(tl.Tools), `"`+name+`"`)
	}

	call(t, agent, "on", "write_file", `{"path":"a.txt","content":"one\n"}`, "ok")
	cp := call(t, agent, "on", "checkpoint", `{"label":"a.txt written"}`, "ok")
	id := cp["checkpoint"].(map[string]any)["id"].(string)
	call(t, agent, "on", "write_file", `{"path":"a.txt","content":"broken\n"}`, "ok")
	call(t, agent, "on", "write_file", `{"path":"b.txt","content":"b\n"}`, "ok")

	list := call(t, agent, "on", "list_checkpoints", `{}`, "ok")
	require.Len(t, list["checkpoints"], 1)
	require.Equal(t, "a.txt written", list["checkpoints"].([]any)[0].(map[string]any)["label"])
	diff := call(t, agent, "on", "diff_since", `{"checkpoint":"`+id[:12]+`"}`, "ok")
	require.EqualValues(t, 1, diff["added"])
	require.EqualValues(t, 1, diff["modified"])
	require.Contains(t, diff["diff"], "+broken")
	start := call(t, agent, "on", "diff_since", `{}`, "ok")
	require.EqualValues(t, 2, start["added"])

	undo := call(t, agent, "on", "undo_to", `{"checkpoint":"`+id[:12]+`"}`, "ok")
	require.Contains(t, undo["summary_text"], "back at checkpoint")
	got := call(t, agent, "on", "read_file", `{"path":"a.txt"}`, "ok")
	require.Equal(t, "one\n", got["inline_text"], "%v", got)
	ex := call(t, agent, "on", "exists", `{"path":"b.txt"}`, "ok")
	require.Equal(t, false, ex["exists"])

	// Not a checkpoint: an ordinary snapshot is no target.
	snap, err := admin.CreateSnapshot(ctx, "on", "operator's")
	require.NoError(t, err)
	r = call(t, agent, "on", "undo_to", `{"checkpoint":"`+snap.ID[:12]+`"}`, "not_found")
	require.Equal(t, "not_found", r["error_code"])
	// The quota (2 snapshots: the checkpoint and the operator's) holds.
	r = call(t, agent, "on", "checkpoint", `{"label":"one more"}`, "too_large")
	require.Equal(t, "too_large", r["error_code"])

	// Journaled: the calls in the call log, the undo in the history.
	calls, err := admin.Calls(ctx, "on", 0, 100)
	require.NoError(t, err)
	var tools []string
	for _, c := range calls.Calls {
		tools = append(tools, c.Tool)
	}
	require.Subset(t, tools, []string{"checkpoint", "list_checkpoints", "diff_since", "undo_to"})
	log, err := admin.LogAll(ctx, "on", false)
	require.NoError(t, err)
	var undone []string
	for _, e := range log.Entries {
		if e.Tool == "undo_to" && e.Seq > e.SeqBefore {
			undone = append(undone, e.Paths...)
		}
	}
	require.NotEmpty(t, undone, "the undo changed the session, and its history says so")

	// Over MCP, undo to before a call.
	cs, err := mcpConnect(ctx, "http://"+s.srv.TCPAddr()+"/v1/sessions/on/mcp", on.Token)
	require.NoError(t, err)
	defer cs.Close()
	mt, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, x := range mt.Tools {
		names = append(names, x.Name)
	}
	require.Contains(t, names, "undo_to")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "c.txt", "content": "c\n"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	calls, err = admin.Calls(ctx, "on", 0, 100)
	require.NoError(t, err)
	last := calls.Calls[len(calls.Calls)-1]
	require.Equal(t, "write_file", last.Tool)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "undo_to", Arguments: map[string]any{"before_call": last.N}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	ex = call(t, agent, "on", "exists", `{"path":"c.txt"}`, "ok")
	require.Equal(t, false, ex["exists"])
}

package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs/policy"
)

// openRepo opens a snapshot repository in dir, as the daemon does.
func openRepo(ctx context.Context, dir string) (*snapshot.Repo, error) {
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	if err != nil {
		return nil, err
	}
	return snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
}

// The `vfsd mcp --session ID` verb: one session's tools on standard input
// and output, for an MCP client that starts vfsd as a subprocess
// ({"command": "vfsd", "args": ["mcp", "--session", "ID"]}).
//
// The session here is in-process; a verb that talks to a running daemon
// passes a Backend whose Definitions and Call forward to the daemon's API
// instead of ToolsetBackend.
func Example_stdio() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	repo, err := openRepo(ctx, "/var/lib/vfsd")
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close()
	s, err := repo.Session("ID") // from --session
	if err != nil {
		log.Fatal(err)
	}
	ts, err := tools.New(s, tools.Options{Policy: policy.Default(), Blobs: repo.Blobs()})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := mcpserver.NewServer(mcpserver.ToolsetBackend(ts, s.ID()), mcpserver.Options{Profile: "anthropic"})
	if err != nil {
		log.Fatal(err)
	}
	// Logs go to stderr: stdout carries the protocol.
	if err := mcpserver.ServeStdio(ctx, srv); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// A per-session HTTP endpoint of the daemon, /sessions/{id}/mcp: one
// handler for every session, choosing the session's server by the URL.
// Each session's server is built once and reused; a client is any MCP
// client speaking the streamable HTTP transport.
func Example_http() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "vfsd-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	repo, err := openRepo(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close()
	if _, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "s1"}); err != nil {
		log.Fatal(err)
	}

	var mu sync.Mutex
	servers := map[string]*mcp.Server{} // session ID → its server
	serverFor := func(r *http.Request) *mcp.Server {
		id := r.PathValue("id")
		mu.Lock()
		defer mu.Unlock()
		if srv, ok := servers[id]; ok {
			return srv
		}
		s, err := repo.Session(id)
		if err != nil {
			return nil // 400 Bad Request: no such session
		}
		ts, err := tools.New(s, tools.Options{Blobs: repo.Blobs()})
		if err != nil {
			return nil
		}
		srv, err := mcpserver.NewServer(mcpserver.ToolsetBackend(ts, id), mcpserver.Options{Profile: "minimal"})
		if err != nil {
			return nil
		}
		servers[id] = srv
		return srv
	}
	mux := http.NewServeMux()
	mux.Handle("/sessions/{id}/mcp", mcpserver.HTTPHandler(serverFor)) // behind the daemon's authentication
	hs := httptest.NewServer(mux)
	defer hs.Close()

	// An agent's MCP client.
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/sessions/s1/mcp"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range list.Tools {
		fmt.Println("tool:", t.Name)
	}
	for _, call := range []mcp.CallToolParams{
		{Name: "write_file", Arguments: map[string]any{"path": "hello.txt", "content": "hello\n"}},
		{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}},
		{Name: "read_file", Arguments: map[string]any{"path": "missing.txt"}},
	} {
		res, err := cs.CallTool(ctx, &call)
		if err != nil {
			log.Fatal(err)
		}
		receipt := res.StructuredContent.(map[string]any)
		fmt.Printf("%s: isError=%v status=%v text=%q\n", call.Name, res.IsError, receipt["status"], res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// tool: read_file
	// tool: write_file
	// tool: list_directory
	// tool: delete_file
	// write_file: isError=false status=ok text="Created hello.txt (6 bytes, version 1)"
	// read_file: isError=false status=ok text="hello\n"
	// read_file: isError=true status=not_found text="stat /missing.txt: does not exist; list the parent directory to see what exists"
}

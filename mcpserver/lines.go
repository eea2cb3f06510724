package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxLineBytes bounds one line of the stdio transport (one message): the
// SDK's own bound, and the HTTP transport's on a request body. Tests
// lower it.
var maxLineBytes = 16 << 20

// lockedWriter serialises writes: the SDK's messages and filterLines'
// errors, each one Write of a whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: the SDK closes its writer when the session ends,
// and standard output outlives it.
func (l *lockedWriter) Close() error { return nil }

// filterLines copies the JSON-RPC messages of in, one a line, to pw for
// the SDK, which ends a session at the first line it cannot decode.
// Lines that are not messages are answered on out with a JSON-RPC error
// and skipped; lines over limit bytes are discarded as they are read. It
// closes pw when in ends, and returns when the SDK stops reading pw.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, limit int) {
	br := bufio.NewReaderSize(in, 64<<10)
	batches := false // the client asked for a protocol that has batches
	for {
		line, tooLong, err := readLine(br, limit)
		var reject []byte
		switch {
		case tooLong:
			reject = rpcError(jsonrpc.CodeInvalidRequest, nil, "the message is over %d bytes, the most one line may hold; it was discarded", limit)
		case len(bytes.TrimSpace(line)) > 0:
			reject = checkLine(line, &batches)
			if reject == nil {
				if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return // the session is over
				}
			}
		}
		if reject != nil {
			if _, werr := out.Write(reject); werr != nil {
				pw.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads one line without its line ending. A line longer than
// limit is read to its end but not kept: tooLong says so.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+2 { // room for "\r\n"
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if !tooLong && len(line) > limit {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

// rpcError returns the error response to a request of id (nil: null), a
// line ready to write.
func rpcError(code int64, id any, format string, args ...any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": fmt.Sprintf(format, args...)}})
	if err != nil { // cannot happen: every value is plain
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return append(b, '\n')
}

// checkLine returns the error response to a line the SDK could not take:
// not JSON, no JSON-RPC message, or a batch where the protocol the client
// asked for has none. It notes in *batches whether an initialize asked
// for a protocol with batches (before 2025-06-18).
func checkLine(line []byte, batches *bool) []byte {
	if !json.Valid(line) {
		return rpcError(jsonrpc.CodeParseError, nil, "parse error: the line is not one JSON value; send one JSON-RPC message per line")
	}
	if t := bytes.TrimLeft(line, " \t\r"); len(t) > 0 && t[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(line, &elems); err != nil || len(elems) == 0 {
			return rpcError(jsonrpc.CodeInvalidRequest, nil, "invalid request: an empty batch, or an array that is no batch")
		}
		if !*batches {
			return rpcError(jsonrpc.CodeInvalidRequest, nil, "invalid request: batches are not part of the protocol version this session asked for; send one message per line")
		}
		for _, e := range elems {
			if _, err := jsonrpc.DecodeMessage(e); err != nil {
				return rpcError(jsonrpc.CodeInvalidRequest, nil, "invalid request: a batch element is not a JSON-RPC message: %v", err)
			}
		}
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return rpcError(jsonrpc.CodeInvalidRequest, usableID(line), "invalid request: not a JSON-RPC 2.0 message: %v", err)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		*batches = p.ProtocolVersion != "" && p.ProtocolVersion < "2025-06-18"
	}
	return nil
}

// usableID returns the line's id if it is a string or a number, else nil.
func usableID(line []byte) any {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	switch m.ID.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

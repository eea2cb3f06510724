package weakincentives

import (
	"encoding/json"

	"github.com/vfsd/vfsd/contract"
)

// Invoked are the structured fields the document's ToolInvoked payloads
// carry ("path, mode, result size"), for the daemon's tool-call events and
// metrics.
type Invoked struct {
	Tool string `json:"tool"`
	// Path is the path the call named, normalised ("." the root; "" when
	// the parameters did not parse).
	Path string `json:"path"`
	// Mode is write_file's mode ("" for the other tools).
	Mode string `json:"mode,omitempty"`
	// ResultSize is the size of the result body in bytes.
	ResultSize int    `json:"result_size"`
	Status     string `json:"status"`
}

// InvokedFields describes one call for telemetry.
func InvokedFields(tool string, params json.RawMessage, r contract.Result) Invoked {
	inv := Invoked{Tool: tool, ResultSize: len(r.Body), Status: r.Status}
	var p struct {
		Path *VfsPath `json:"path"`
		Mode string   `json:"mode"`
	}
	if json.Unmarshal(params, &p) == nil {
		if p.Path != nil {
			if np, err := limitsOf(nil).normalize(*p.Path); err == nil {
				inv.Path = np.String()
			}
		} else if tool == "list_directory" {
			inv.Path = "."
		}
		if tool == "write_file" {
			inv.Mode = p.Mode
			if inv.Mode == "" {
				inv.Mode = "create"
			}
		}
	}
	return inv
}

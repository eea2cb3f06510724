package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs/policy"
)

// policyFileUsage is the help of --policy-file.
const policyFileUsage = `the session's policy as data: a JSON policy object (vfsd's fields, and "base": the preset it starts from), or - for stdin; see docs/api.md, Policies`

// readPolicyFile reads a --policy-file: a JSON policy object, or a
// preset's name as a JSON string; "-" reads standard input. The daemon
// decodes it (strictly, for the session's contract); this only checks it
// is JSON.
func readPolicyFile(name string, stdin io.Reader) (json.RawMessage, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("--policy-file %s: %w", name, err)}
	}
	if !json.Valid(b) {
		return nil, usageError{fmt.Errorf("--policy-file %s: not valid JSON; give a policy object like {\"base\":\"default\",\"read_roots\":[\"src\"]} (see docs/api.md, Policies)", name)}
	}
	return b, nil
}

// setPolicy puts --policy or --policy-file into a session request.
func setPolicy(cmd *cobra.Command, req *api.CreateSessionRequest, preset, file string) error {
	if file == "" {
		return nil
	}
	if preset != "" {
		return usageError{errors.New("give --policy (a preset) or --policy-file, not both; a policy file names its preset as \"base\"")}
	}
	raw, err := readPolicyFile(file, cmd.InOrStdin())
	if err != nil {
		return err
	}
	req.Policy, req.PolicyObject = "", raw
	return nil
}

// sessionPolicyOf is the policy a session enforces, as the daemon reports
// it: its effective_policy, or (from an older daemon) the preset it names.
func sessionPolicyOf(s *api.Session) (*policy.Policy, error) {
	if len(s.EffectivePolicy) > 0 {
		return policy.FromJSON(s.EffectivePolicy)
	}
	return policy.Preset(s.Policy)
}

// Package sandbox runs the command of vfsd run on a mounted session, on
// Linux, in one of two sandboxes that give the same guarantees: bubblewrap
// (Bwrap) when it is installed, else vfsd's own namespaces (Namespace,
// root only). Either way the host is read-only but for the session and the
// writable paths, /tmp, /dev and /proc are private, the command has no
// capabilities even as root and runs in a new session (no controlling
// terminal), the daemon's files and the host's other sessions and Unix
// sockets are hidden, and the network is cut when asked.
//
// A Spec says what runs and where; Resolve picks its Kind, SetMasks what
// it hides, Env its environment; Spec.Command returns the process, whose
// Wait reports the command's exit status as a shell would. The namespace
// sandbox runs the program that uses this package again (os.Executable)
// with the hidden verb ChildVerb as its first argument: that program must
// hand such a run to RunChild, which builds the sandbox and runs the
// command in it.
//
// The package builds everywhere but holds only these declarations outside
// Linux. Its error messages name vfsd run's flags (--sandbox, --rw, --env),
// as they are what the user gave.
package sandbox

// ChildVerb is the hidden verb, the first argument, with which the
// namespace sandbox runs vfsd again as its init: `vfsd ChildVerb SPEC --
// CMD [ARG]...`. The program must pass SPEC and CMD on to RunChild.
const ChildVerb = "__run-namespace-child"

// Exit statuses for failures of vfsd run's own, as container runtimes use
// them; otherwise vfsd run ends with the command's status.
const (
	ExitFailed   = 125 // vfsd could not set up or tear down the run
	ExitCannot   = 126 // the command could not be run
	ExitNotFound = 127 // the command was not found
	ExitSignaled = 128 // plus the signal that ended the command
)

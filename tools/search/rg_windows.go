package search

import "os/exec"

// killGroupOnCancel leaves exec's default on Windows: the context's end
// kills rg itself (TerminateProcess); rg starts no children of its own.
func killGroupOnCancel(cmd *exec.Cmd) {}

//go:build !linux

package llamacpp_test

import "os/exec"

// dieWithTest: only Linux lets a child die with its parent (Pdeathsig); elsewhere the
// context's cancel is all there is.
func dieWithTest(*exec.Cmd) {}

package llamacpp_test

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd when the test process dies, however it dies: a CPU
// hog left running by a test binary killed mid-run (a timeout, a Ctrl-C of go test) would
// slow every later timed run on the machine.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

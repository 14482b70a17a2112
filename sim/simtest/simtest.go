// Package simtest starts pel's simulated engine inside a test (in the spirit of
// net/http/httptest): a scenario served on loopback, closed when the test ends, so that
// every package's end-to-end tests against pel sim start it the same way.
package simtest

import (
	"testing"

	"github.com/pel-ladder/pel/sim"
)

// Start serves scenario (a built-in name or a file) on 127.0.0.1 with o, and with its DCGM
// page on a port of its own when dcgm is set (Server.DCGMURL). The server closes when t and
// its subtests end; a failure to start ends the test.
func Start(t testing.TB, scenario string, o sim.Options, dcgm bool) *sim.Server {
	t.Helper()
	sc, err := sim.LoadScenario(scenario)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.NewServer(sc, o)
	if err != nil {
		t.Fatal(err)
	}
	dcgmAddr := ""
	if dcgm {
		dcgmAddr = "127.0.0.1:0"
	}
	if err := srv.Start("127.0.0.1:0", dcgmAddr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

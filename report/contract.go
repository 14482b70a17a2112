package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pel-ladder/pel/contract"
)

// ContractText writes what pel contract check found in the contract k read from path: its
// identity, arrival and limits, tasks, SLO and the warm-phase decision it plans.
func ContractText(w io.Writer, k *contract.Contract, path string) error {
	model := k.Model
	if model == "" {
		model = "the server's first model"
	}
	tasks := make([]string, len(k.Tasks))
	for i := range k.Tasks {
		tasks[i] = k.TaskSummary(i)
	}
	_, err := fmt.Fprintf(w, "contract  %s version %s (%s)\nsha256    %s\narrival   %s, %s; api %s, model %s\ntasks     %s\nslo       %s\nwarm      %s\n",
		k.Name, k.Version, path, k.SHA256(), k.Arrival, k.Limits(), k.API, model, strings.Join(tasks, "; "), k.SLO, k.Planned().DecisionText())
	return err
}

// ContractJSON writes the contract's name, version, sha256 and canonical form as JSON.
func ContractJSON(w io.Writer, k *contract.Contract) error {
	return indented(w, struct {
		Name     string          `json:"name"`
		Version  string          `json:"version"`
		SHA256   string          `json:"sha256"`
		Contract json.RawMessage `json:"contract"`
	}{k.Name, k.Version, k.SHA256(), k.Canonical()})
}

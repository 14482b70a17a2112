package gpuspec

import "testing"

func TestByModelName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"NVIDIA H100 80GB HBM3", "h100-sxm"},
		{"h200", "h200"},
		{"NVIDIA A100-SXM4-80GB", "a100-80gb"},
		{"NVIDIA A10G", "a10g"},
		{"AMD Instinct MI300X", "mi300x"},
		{"NVIDIA L4", "l4"},
		{"NVIDIA H100 PCIe", ""}, // another part: no catalog entry, no guess
		{"", ""},
	}
	for _, tt := range tests {
		g, ok := ByModelName(tt.in)
		if got := g.Key; got != tt.want || ok != (tt.want != "") {
			t.Errorf("ByModelName(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	for _, k := range Keys() {
		g, _ := Lookup(k)
		if g.MemBW <= 0 || g.PeakFLOPS <= 0 || g.MemBytes <= 0 || g.LinkBW <= 0 || g.Source == "" {
			t.Errorf("%s: incomplete %+v", k, g)
		}
	}
}

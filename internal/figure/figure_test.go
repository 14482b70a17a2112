package figure

import (
	"math"
	"testing"
	"time"
)

func p(v float64) *float64 { return &v }

func TestPrint(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Fmt(nil), "-"},
		{Fmt(p(1234.5678)), "1235"},
		{Fmt(p(0.000123456)), "0.0001235"},
		{FmtCI(nil, nil), "-"},
		{FmtCI(p(1), nil), "[1, +inf)"},
		{FmtCI(nil, p(2)), "(-inf, 2]"},
		{FmtCI(p(1.5), p(2.25)), "[1.5, 2.25]"},
		{FmtPct(nil), "-"},
		{FmtPct(p(12.34)), "+12.3%"},
		{FmtPct(p(-0.04)), "-0.0%"},
		{FmtRel(nil, p(1)), "-"},
		{FmtRel(p(5), p(-50)), "+10.0%"},
		{FmtRel(p(0.5), p(0)), "+0.5"},
		{FmtRel(p(-2), nil), "-2"},
		{OrDash(""), "-"},
		{OrDash("vllm"), "vllm"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"ms", Ms(1500 * time.Microsecond), 1.5},
		{"mean", Mean([]float64{1, 2, 6}), 3},
		{"mean of none", Mean(nil), 0},
		{"round3", Round3(1.23456), 1.235},
		{"round3 half away from zero", Round3(-0.0005), -0.001},
		{"sig6", Sig6(123456.789), 123457},
		{"sig6 small", Sig6(0.000123456789), 0.000123457},
		{"sig6 zero", Sig6(0), 0},
		{"sig 2", Sig(0.012345, 2), 0.012},
		{"sig 1", Sig(123.4, 1), 100},
		{"sig3", Sig3(1234.5678), 1230},
		{"sig3 small", Sig3(0.00123456), 0.00123},
		{"sig3 negative", Sig3(-2.3456), -2.35},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if Ptr(v) != nil {
			t.Errorf("Ptr(%v) is not nil", v)
		}
		if r := Round3(v); !(math.IsNaN(v) && math.IsNaN(r)) && r != v {
			t.Errorf("Round3(%v) = %v", v, r)
		}
		if r := Sig3(v); r != 0 {
			t.Errorf("Sig3(%v) = %v, want 0 (a number evidence.json can carry)", v, r)
		}
	}
	if r := Sig3(math.Copysign(0, -1)); math.Signbit(r) {
		t.Error("Sig3(-0) is -0, want 0")
	}
	if x := Ptr(2); x == nil || *x != 2 {
		t.Errorf("Ptr(2) = %v", x)
	}
	if !math.IsNaN(OrNaN(nil)) || OrNaN(p(3)) != 3 {
		t.Error("OrNaN")
	}
}

func TestStep125(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.01, 2}, {4, 5}, {7, 10}, {0.02, 0.02}, {330, 500}, {0, 1}, {-2, 1},
	} {
		if got := Step125(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Step125(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
}

package loadgen

import (
	"slices"
	"testing"

	"github.com/pel-ladder/pel/record"
)

// TestKeptTimingsRoundTrip: what a stream keeps while open comes back in the record as it
// was appended, whatever the gaps (a clock that steps back included) and counts.
func TestKeptTimingsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		us     []int64
		tokens []int
	}{
		{"none", nil, nil},
		{"one", []int64{5000}, []int{1}},
		{"steady 100 ms", []int64{5000, 105000, 205000, 305000}, []int{1, 1, 1, 1}},
		{"same instant", []int64{7, 7, 7}, []int{3, 0, 2}},
		{"clock steps back", []int64{900, 100, 50_000_000}, []int{1, 1, 1}},
		{"hours and huge weights", []int64{1, 3_600_000_000, 7_200_000_000}, []int{record.MaxTokens, 1 << 40, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st streamState
			for i := range tc.us {
				st.keep(tc.us[i], tc.tokens[i])
			}
			// A retried attempt's record keeps its slices' capacity (resetAttempt).
			rec := &record.Record{ChunkUS: make([]int64, 0, 2), ChunkTokens: make([]int, 0, 2)}
			st.unpackTimings(rec)
			if !slices.Equal(rec.ChunkUS, tc.us) || !slices.Equal(rec.ChunkTokens, tc.tokens) {
				t.Errorf("got %v %v, want %v %v", rec.ChunkUS, rec.ChunkTokens, tc.us, tc.tokens)
			}
			if st.nTimed != 0 || st.timed != nil {
				t.Errorf("stream state not emptied: %d kept, %d bytes", st.nTimed, len(st.timed))
			}
			st.unpackTimings(rec) // a second call (an error after the end) changes nothing
			if !slices.Equal(rec.ChunkUS, tc.us) {
				t.Errorf("second unpack: %v", rec.ChunkUS)
			}
		})
	}
}

package scrape

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// TestWindowQuantiles: 20 requests a second with a TTFT of 30 ms (vLLM bucket (20, 40] ms)
// and one of 200 ms at second 5, sampled every second for 10 s. Over the window [0, 10] the
// histogram holds 201 TTFTs: the 200th smallest is in (20, 40], the 201st in (100, 250],
// and the p99 (rank 198.99) is the (20, 40] bucket's, interpolated.
func TestWindowQuantiles(t *testing.T) {
	sc := scrapetest.Healthy()
	sc.ReqRate, sc.TTFT = 20, []scrapetest.Obs{{V: 0.03, W: 1}}
	sc.SlowTTFT = []scrapetest.Single{{At: 105, V: 0.2}}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ss []Sample
	for s := 0; s <= 10; s++ {
		fams, err := ParsePage(strings.NewReader(sc.PageAt(float64(100+s), 0)), "text/plain; version=0.0.4")
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, Sample{T: start.Add(time.Duration(s) * time.Second), Endpoint: "e", Kind: KindEngine, OK: true, Families: fams})
	}
	qs, err := WindowQuantiles(ss, start, 0, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	q, ok := qs[evidence.SigServerTTFTP99]
	if !ok || q.Q != 0.99 || q.Count() != 201 {
		t.Fatalf("TTFT p99: %+v, count %d; want q 0.99 over 201", q, q.Count())
	}
	for _, c := range []struct {
		rank   int
		lo, hi float64
	}{{1, 20, 40}, {200, 20, 40}, {201, 100, 250}} {
		_, lo, hi, ok := q.Rank(c.rank)
		if !ok || lo != c.lo || hi != c.hi {
			t.Errorf("rank %d: bucket (%v, %v] ok %v, want (%v, %v]", c.rank, lo, hi, ok, c.lo, c.hi)
		}
	}
	if _, _, _, ok := q.Rank(202); ok {
		t.Error("rank 202 of 201: want no value")
	}
	if v, lo, hi, ok := q.Value(); !ok || lo != 20 || hi != 40 || v < 39 || v > 40 {
		t.Errorf("p99 %v in (%v, %v], want about 39.8 in (20, 40]", v, lo, hi)
	}
	if _, ok := qs[evidence.SigServerTTFTP50]; !ok {
		t.Error("no TTFT p50 from the same histogram")
	}
}

package scrape

import (
	"bytes"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestCountProtoObjects(t *testing.T) {
	// One histogram metric with two labels and three buckets, one gauge with one label:
	// 2 metrics + 3 labels + 1 histogram + 3 buckets = 9 objects.
	fams := []*dto.MetricFamily{
		{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("1")}, {Name: proto.String("b"), Value: proto.String("2")}},
			Histogram: &dto.Histogram{SampleCount: proto.Uint64(3), Bucket: []*dto.Bucket{
				{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}, {UpperBound: proto.Float64(2), CumulativeCount: proto.Uint64(2)},
				{UpperBound: proto.Float64(4), CumulativeCount: proto.Uint64(3)}}},
		}}},
		{Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("c"), Value: proto.String("3")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
	}
	var page bytes.Buffer
	enc := expfmt.NewEncoder(&page, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := countProtoObjects(page.Bytes(), 100); err != nil || n != 9 {
		t.Errorf("counted %d objects (%v), want 9", n, err)
	}
	if _, err := parsePage(page.Bytes(), string(expfmt.NewFormat(expfmt.TypeProtoDelim))); err != nil {
		t.Errorf("a small page is refused: %v", err)
	}
	// Empty metrics past the bound are refused before they are decoded.
	var fam []byte
	fam = protowire.AppendTag(fam, 1, protowire.BytesType)
	fam = protowire.AppendString(fam, "x")
	for range maxPageObjects + 1 {
		fam = append(fam, fieldFamilyMetric<<3|2, 0)
	}
	huge := append(protowire.AppendVarint(nil, uint64(len(fam))), fam...)
	_, err := parsePage(huge, string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	if err == nil || !strings.Contains(err.Error(), "over pel's bound of 320000") {
		t.Errorf("%d empty metrics: %v", maxPageObjects+1, err)
	}
	// A malformed page is left to the decoder, which names the problem.
	if _, err := countProtoObjects([]byte{0xff, 0xff}, 10); err == nil {
		t.Error("a malformed length is not an error")
	}
}

// FuzzCountProtoObjects: any bytes are counted or refused, never a panic; a page the
// decoder accepts is never refused as malformed by the count.
func FuzzCountProtoObjects(f *testing.F) {
	f.Add([]byte{4, 0x22, 0, 0x22, 0})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Add(protowire.AppendVarint(nil, 1<<40))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := countProtoObjects(b, 1000)
		if n < 0 {
			t.Fatalf("negative count %d", n)
		}
		if err != nil {
			return
		}
		parsePage(b, string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	})
}

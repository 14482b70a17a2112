package scrape

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxPageObjects bounds the messages a protobuf page decodes into (metrics, labels,
// buckets, quantiles, spans, exemplars, all together): Go's protobuf decoder allocates every
// one (~100 bytes and up) before pel sees the family, and an empty metric is two bytes on
// the wire, so a 16 MiB page of 8 M empty metrics would need 1.9 GB. Counted on the wire first;
// 16 objects per sample is more labels and buckets than any engine's page carries.
const maxPageObjects = 16 * MaxPageSamples

// Field numbers of io.prometheus.client's metrics.proto (client_model) that hold repeated
// messages, and the messages that nest them.
const (
	fieldFamilyMetric     = 4  // MetricFamily.metric
	fieldMetricLabel      = 1  // Metric.label
	fieldMetricSummary    = 4  // Metric.summary
	fieldMetricHistogram  = 7  // Metric.histogram
	fieldSummaryQuantile  = 3  // Summary.quantile
	fieldHistogramBucket  = 3  // Histogram.bucket
	fieldHistogramNegSpan = 9  // Histogram.negative_span
	fieldHistogramPosSpan = 12 // Histogram.positive_span
	fieldHistogramExempl  = 16 // Histogram.exemplars
)

var errProtoWire = errors.New("malformed protobuf")

// countProtoObjects counts, on the wire, the messages a varint-delimited page of
// MetricFamily messages would decode into, stopping past limit.
func countProtoObjects(b []byte, limit int) (int, error) {
	n := 0
	for len(b) > 0 && n <= limit {
		size, k := protowire.ConsumeVarint(b)
		if k < 0 || size > uint64(len(b)-k) {
			return n, errProtoWire
		}
		msg := b[k : k+int(size)]
		b = b[k+int(size):]
		if err := eachField(msg, func(num protowire.Number, v []byte) error {
			if num != fieldFamilyMetric {
				return nil
			}
			n++
			return eachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case fieldMetricLabel:
					n++
				case fieldMetricSummary:
					n++
					return eachField(v, func(num protowire.Number, _ []byte) error {
						if num == fieldSummaryQuantile {
							n++
						}
						return nil
					})
				case fieldMetricHistogram:
					n++
					return eachField(v, func(num protowire.Number, _ []byte) error {
						switch num {
						case fieldHistogramBucket, fieldHistogramNegSpan, fieldHistogramPosSpan, fieldHistogramExempl:
							n++
						}
						return nil
					})
				}
				return nil
			})
		}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// eachField calls f with every length-delimited field of message b (other wire types are
// skipped).
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return errProtoWire
		}
		b = b[k:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errProtoWire
			}
			if err := f(num, v); err != nil {
				return err
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return errProtoWire
		}
		b = b[m:]
	}
	return nil
}

// tooManyObjects is the error of a protobuf page past maxPageObjects.
func tooManyObjects(n int) error {
	return &PageError{Msg: fmt.Sprintf("protobuf page holds %d metrics, labels and buckets or more, over pel's bound of %d: not parsed", n, maxPageObjects)}
}

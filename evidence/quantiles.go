package evidence

import "encoding/json"

// Measured reports whether the distribution rests on any sample.
func (q Quantiles) Measured() bool { return q.N > 0 }

// MarshalJSON writes a distribution with no samples as {"n": 0, "not_measured": true}: its
// percentiles are not 0, they do not exist, and a reader of the file must not find a 0 that
// a bound would read as met.
func (q Quantiles) MarshalJSON() ([]byte, error) {
	if q.N == 0 {
		return []byte(`{"n":0,"not_measured":true}`), nil
	}
	type plain Quantiles // without this method
	return json.Marshal(plain(q))
}

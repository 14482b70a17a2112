package trace

import (
	"fmt"
	"reflect"
	"strings"
)

// checkNonNegative is the last guard of "pel trace never prints a negative duration, share
// or idle time": every number in the ranks' figures must be ≥ 0. The readers already reject
// negative times (timeline.MalformedError, with counts) and the analyses are built so that
// valid times give no negative figure; an input that still produces one is reported as
// malformed, naming the figure, rather than printed.
func checkNonNegative(r *Result) error {
	var bad []string
	for i := range r.Ranks {
		walkNumbers(reflect.ValueOf(r.Ranks[i]), fmt.Sprintf("ranks[%d]", i), func(path string, v float64) {
			if v < 0 && len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%s = %v", path, v))
			}
		})
	}
	if len(bad) > 0 {
		return fmt.Errorf("malformed trace: negative figures %s", strings.Join(bad, ", "))
	}
	return nil
}

func walkNumbers(v reflect.Value, path string, fn func(string, float64)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkNumbers(v.Elem(), path, fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "Rank" { // a rank number is an id, not a figure
				continue
			}
			walkNumbers(v.Field(i), path+"."+f.Name, fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkNumbers(v.Index(i), fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fn(path, float64(v.Int()))
	case reflect.Float32, reflect.Float64:
		fn(path, v.Float())
	}
}

package workload

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
)

func shardContract(t *testing.T, arrival string) *contract.Contract {
	t.Helper()
	c, err := contract.Parse([]byte("name: s\nversion: 1\narrival: "+arrival+"\nrequests: 200\ntasks:\n  - {name: a, weight: 3, prompt_tokens: {dist: uniform, min: 10, max: 500}}\n  - {name: b, prompt_tokens: 50, output_tokens: {dist: uniform, min: 1, max: 99}}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The shards' requests together are the single schedule's, request for request.
func TestShardsUnionIsTheSchedule(t *testing.T) {
	for _, arrival := range []string{"{process: poisson, rate: 50}", "{process: gamma, rate: 50, cv: 3}", "{process: ramp, from: 1, to: 90, over: 5s}"} {
		c := shardContract(t, arrival)
		one, err := New(c, Options{Nonce: 7})
		if err != nil {
			t.Fatal(err)
		}
		var want []Request
		for r, ok := one.Next(); ok; r, ok = one.Next() {
			want = append(want, r)
		}
		for _, n := range []int{1, 3, 4} {
			got := make([]Request, len(want))
			seen := 0
			for i := 0; i < n; i++ {
				s, _ := New(c, Options{Nonce: 7})
				sh := Sharded(s, Shard{Index: i, Count: n})
				for r, ok := sh.Next(); ok; r, ok = sh.Next() {
					if r.Seq%n != i {
						t.Fatalf("%s: shard %d/%d ran seq %d", arrival, i, n, r.Seq)
					}
					got[r.Seq] = r
					seen++
				}
			}
			if seen != len(want) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %d shards: the union differs from the schedule (%d of %d requests)", arrival, n, seen, len(want))
			}
		}
	}
}

func TestShardClosedLoopDividesConcurrency(t *testing.T) {
	c := shardContract(t, "{process: closed, concurrency: 10}")
	for _, n := range []int{1, 3, 4, 10, 16} {
		total := 0
		for i := 0; i < n; i++ {
			s, _ := New(c, Options{})
			sh := Sharded(s, Shard{Index: i, Count: n})
			total += sh.Closed()
			if sh.Closed() == 0 {
				if _, ok := sh.Next(); ok {
					t.Fatalf("%d/%d: a shard without workers yields requests", i, n)
				}
			}
		}
		if total != 10 {
			t.Errorf("%d shards: concurrency adds up to %d, want 10", n, total)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"0/1", ""}, {"3/4", ""}, {"4/4", "want 0 to 3"}, {"-1/4", "want 0 to 3"}, {"1/0", "want 1 to"}, {"1", "INDEX/COUNT"}, {"a/b", "whole numbers"},
	} {
		s, err := ParseShard(c.in)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v, %v; want error %q", c.in, s, err, c.err)
		}
	}
}

func TestSharedNonce(t *testing.T) {
	c := shardContract(t, "{process: poisson, rate: 5}")
	a, b := SharedNonce(c, 1), SharedNonce(c, 2)
	if a == 0 || a == b || a != SharedNonce(c, 1) || a >= 1<<24 {
		t.Fatalf("nonces %d %d", a, b)
	}
}

// FuzzParseShard: any flag value parses to a shard inside its count, or to an error.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "3/4", "9999/10000", "1/", "/", "-0/-0", " 2/3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err == nil && (sh.Check() != nil || sh.Index < 0 || sh.Index >= sh.Count) {
			t.Fatalf("%q parsed to %+v", s, sh)
		}
	})
}

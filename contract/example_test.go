package contract

import "testing"

func TestExampleParses(t *testing.T) {
	c, err := Parse(Example(), "example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s", c.SHA256(), c.Canonical())
}

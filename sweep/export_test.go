package sweep

// CapacityOf is the capacity at the SLO a sweep with cfg reads off r's judged points, for
// the rendering tests of package sweep_test.
func CapacityOf(r *Result, cfg Config) *Capacity {
	sw := &sweeper{res: r, cfg: cfg}
	return sw.capacity()
}

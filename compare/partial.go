package compare

// partialRuns refuses a partial baseline (evidence.Completeness) unless o allows it, and
// returns the warnings a partial side gets: a partial run's figures describe only part of
// the contract's schedule, so they are no baseline for a change, and a partial candidate is
// judged on what it ran.
func partialRuns(base, cand *Run, o Options) ([]string, error) {
	var warn []string
	if base.Evidence != nil {
		if p := base.Evidence.Run.PartialText(); p != "" {
			if !o.AllowPartialBaseline {
				return nil, badInput("the baseline %s is a partial run (%s): its figures cover only part of the contract's schedule; rerun it whole, or pass --allow-partial-baseline to compare against it anyway", base.Dir, p)
			}
			warn = append(warn, "PARTIAL BASELINE ("+p+"): compared anyway because --allow-partial-baseline was given")
		}
	}
	if cand.Evidence != nil {
		if p := cand.Evidence.Run.PartialText(); p != "" {
			warn = append(warn, "PARTIAL CANDIDATE ("+p+"): judged on what it ran")
		}
	}
	return warn, nil
}

package contract

// Closest returns the candidate within edit distance 2 of name (a typo), or "": the one
// "did you mean" of the program, for contract keys and any other name a user types (a
// scenario, a flag value).
func Closest(name string, candidates []string) string { return closest(name, candidates) }

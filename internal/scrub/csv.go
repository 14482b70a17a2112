package scrub

// CSVCell neutralises a text cell of a CSV file pel writes from outside strings (a task
// name, a finish_reason, an error message): a cell that starts with =, +, -, @, a tab or a
// carriage return is read by spreadsheets as a formula (=HYPERLINK(...), @SUM(...)), so it
// gets a leading single quote, OWASP's rule for CSV injection
// (https://owasp.org/www-community/attacks/CSV_Injection). Numbers pel formats itself are
// not passed here: a negative figure stays a number.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// CSVCells is CSVCell of every cell.
func CSVCells(cells ...string) []string {
	for i, c := range cells {
		cells[i] = CSVCell(c)
	}
	return cells
}

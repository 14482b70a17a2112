// Package badinput is the one error kind for input pel cannot use: a file, flag, contract
// or directory that is wrong, as opposed to a run or verdict that failed. Every package
// marks such errors with it, and the command line maps it to exit status 2.
package badinput

import (
	"errors"
	"fmt"
)

// ErrBadInput is the kind: test with errors.Is.
var ErrBadInput = errors.New("bad input")

// Error carries the kind without putting its name in the message.
type Error struct{ err error }

func (e *Error) Error() string   { return e.err.Error() }
func (e *Error) Unwrap() []error { return []error{ErrBadInput, e.err} }

// Errorf is a bad-input error with the message fmt.Errorf gives (%w wraps as there).
func Errorf(format string, a ...any) error { return &Error{fmt.Errorf(format, a...)} }

// Wrap marks err as bad input, its message unchanged; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{err}
}

// Hide is err as a failure of what ran rather than of its input: its message is err's,
// and errors.Is finds every kind in it but ErrBadInput. A command hides the kind of an
// error it passes on from a later stage (the stage-1 pass over a file it wrote, a sweep's
// later point), so that exit status 2 keeps meaning "nothing was run".
func Hide(err error) error {
	if err == nil || !errors.Is(err, ErrBadInput) {
		return err
	}
	return &hidden{err}
}

type hidden struct{ err error }

func (e *hidden) Error() string { return e.err.Error() }
func (e *hidden) Is(target error) bool {
	return target != ErrBadInput && errors.Is(e.err, target)
}

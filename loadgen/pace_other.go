//go:build !linux

package loadgen

import (
	"context"
	"time"
)

// preciseSleepUntil falls back to RealClock's timer-and-yield wait elsewhere.
func preciseSleepUntil(ctx context.Context, t time.Time) error {
	return RealClock{}.spinSleepUntil(ctx, t, DefaultSpin)
}

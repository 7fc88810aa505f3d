package gcpstandin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The stand-ins' clock. Everything the gcp stand-in times (an enablement's or a grant's
// propagation, a log-based metric's visibility) is judged on one clock per state folder,
// shared by every provider process of a deployment: the real time plus an offset kept in
// the folder. The time stand-in's time_sleep does not wait in real time: it moves that
// clock forward by its duration, at once. What a sleep proves in Google Cloud (that its
// duration passed between what it waits for and what waits for it) holds on the clock
// the gcp stand-in judges with, so the stand-in takes Google's own delays (a grant's two
// minutes, an alert's ten) and the stacks their production waits, and no test waits for
// either in real time.
//
// A sleep sets a deadline (its start on the clock plus its duration) and the clock moves
// to it unless it is there already, so a sleep that starts before another's end ends no
// later than its own deadline. The difference from real time is the engine's own work,
// which takes real time while a sleep takes none: a resource the engine creates right
// after some other sleep has ended sees what was created before that sleep as older by
// its duration, though the resource does not wait for it. That can only hide a missing
// wait, never fail a deployment that waits; the tests show each wait is needed on
// deployments without it (tests/engine), where no other sleep stands in for it.

// clockFile holds the clock's offset from the real time, in nanoseconds.
const clockFile = "clock"

// Now is the stand-ins' clock of the state folder dir (see above).
func Now(dir string) (time.Time, error) {
	off, err := offset(dir)
	if err != nil {
		return time.Time{}, err
	}
	return time.Now().Add(off), nil
}

// Advance moves dir's clock d forward, as if d passed with nothing happening: a test
// puts the time between a release's deployment and its upgrade there.
func Advance(dir string, d time.Duration) error {
	return withLock(dir, func() error {
		off, err := offset(dir)
		if err != nil {
			return err
		}
		return setOffset(dir, off+d)
	})
}

// sleepUntil ends a sleep at deadline on dir's clock: the clock moves forward to it, if
// it is not there already.
func sleepUntil(dir string, deadline time.Time) error {
	return withLock(dir, func() error {
		off, err := offset(dir)
		if err != nil {
			return err
		}
		if now := time.Now().Add(off); deadline.After(now) {
			return setOffset(dir, off+deadline.Sub(now))
		}
		return nil
	})
}

func offset(dir string) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(dir, clockFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stand-in clock: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stand-in clock %s: %w", filepath.Join(dir, clockFile), err)
	}
	return time.Duration(n), nil
}

// setOffset writes the offset whole (writeWhole), so a reader without the lock never sees
// half of it.
func setOffset(dir string, off time.Duration) error {
	if err := writeWhole(dir, clockFile, []byte(strconv.FormatInt(int64(off), 10)+"\n")); err != nil {
		return fmt.Errorf("stand-in clock: %w", err)
	}
	return nil
}

// writeWhole replaces dir/name with data in one rename, so that a reader without the lock
// (an invoke, a test reading the state) sees the old content or the new, never a
// truncated file. Callers hold dir's lock (withLock): the temporary name is theirs alone.
func writeWhole(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".new")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// withLock runs f holding dir's exclusive lock, which every provider process of the
// folder takes before it changes the state or the clock.
func withLock(dir string, f func() error) error {
	if dir == "" {
		return fmt.Errorf("the stand-ins need %s", EnvDir)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("stand-in lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("stand-in lock: %w", err)
	}
	return f()
}

package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupted is the cause of a context that SIGINT or SIGTERM ended (interruptible): the
// operator stopped the command. It exits 128 + the signal's number, as a shell reports a
// process the signal killed, with its one line and no "error:".
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string {
	switch i.sig {
	case syscall.SIGINT:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by " + i.sig.String()
}

// exitCode is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
func (i interrupted) exitCode() int {
	if s, ok := i.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitFailure
}

// isInterrupted reports whether err comes from a context that a signal ended.
func isInterrupted(err error) bool {
	_, ok := asInterrupted(err)
	return ok
}

// asInterrupted returns the interruption err comes from, if a signal ended its context.
func asInterrupted(err error) (interrupted, bool) {
	var i interrupted
	ok := errors.As(err, &i)
	return i, ok
}

// interruptible returns a copy of ctx that SIGINT or SIGTERM cancels with the cause
// interrupted{signal}, as signal.NotifyContext does without saying which signal (or that it
// was one). stop stops the relay and restores the signals' default behaviour (a second
// signal then kills the process); it may be called more than once.
func (f *factory) interruptible(ctx context.Context) (_ context.Context, stop func()) {
	sigs, stopSignals := f.notifySignals()
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(interrupted{sig})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			stopSignals()
			close(done)
			cancel(nil)
		})
	}
}

// notifySignals relays SIGINT and SIGTERM on a channel until stop, through f.signals when set
// (tests).
func (f *factory) notifySignals() (_ <-chan os.Signal, stop func()) {
	if f.signals != nil {
		return f.signals()
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	return c, func() { signal.Stop(c) }
}

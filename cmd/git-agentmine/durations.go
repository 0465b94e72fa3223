package main

import (
	"fmt"
	"reflect"
	"time"

	"github.com/alecthomas/kong"

	"github.com/git-agentmine/git-agentmine/duration"
)

// durationMapper decodes every time.Duration flag in the one grammar of
// durations (package duration): a Go duration or a bare number of
// seconds. Kong's own mapper takes Go durations only.
type durationMapper struct{}

// Decode reads the flag's value.
func (durationMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	d, err := duration.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: %w", s, err)
	}
	target.Set(reflect.ValueOf(d))
	return nil
}

// durationOption installs durationMapper for time.Duration.
func durationOption() kong.Option {
	return kong.TypeMapper(reflect.TypeOf(time.Duration(0)), durationMapper{})
}

// seconds renders d as whole seconds, the way messages count time.
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }

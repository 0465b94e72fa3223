package sessions

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the user and system CPU time this process has used: on a
// machine shared with other work it is steadier than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSelectOutcome30k judges the outcome lines of 30,000 sessions
// (one line each, one session in 50 with a forged line too), as LoadAll
// does for a status of 10k tasks: without seals (as before), and sealed,
// where every supervisor's line is authenticated (one SHA-256 each).
func BenchmarkSelectOutcome30k(b *testing.B) {
	const n = 30000
	type sess struct {
		seal  *Seal
		lines []string
	}
	build := func(sealed bool) []sess {
		out := make([]sess, n)
		for i := range out {
			o := passed("agentmine detach", tRun, fmt.Sprintf("%040x", i))
			o.Session = fmt.Sprintf("%020x", i)
			o.Artifacts = []string{"src/a.go", "src/b.go"}
			if sealed {
				seal, nonce, err := NewSeal("host/12345678", 1000+i, uint64(i))
				if err != nil {
					b.Fatal(err)
				}
				out[i].seal = &seal
				o.Supervisor = nonce.Proof(seal)
			}
			out[i].lines = []string{line(&testing.T{}, o)}
			if sealed && i%50 == 0 {
				out[i].lines = append(out[i].lines, line(&testing.T{}, passed("agentmine detach", tFuture, "ffff")))
			}
		}
		return out
	}
	for _, sealed := range []bool{false, true} {
		name := "unsealed"
		if sealed {
			name = "sealed"
		}
		all := build(sealed)
		b.Run(name, func(b *testing.B) {
			forged := 0
			start := time.Now()
			cpu0 := cpuTime()
			for it := 0; it < b.N; it++ {
				forged = 0
				for _, s := range all {
					o, fs := selectOutcome(s.seal, s.lines)
					if o == nil {
						b.Fatal("no verdict")
					}
					forged += len(fs)
				}
			}
			if sealed && forged != n/50 {
				b.Fatalf("%d forged lines, want %d", forged, n/50)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "wall-ms/30k")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N)/1000, "cpu-ms/30k")
		})
	}
}

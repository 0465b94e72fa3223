package launch

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStartWait measures a whole supervised run of /bin/true (log,
// pipe, group check) against exec.Command running it bare.
func BenchmarkStartWait(b *testing.B) {
	log := filepath.Join(b.TempDir(), "s.log")
	b.Run("launch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, err := Start(context.Background(), Spec{Argv: []string{"/bin/true"}, LogPath: log})
			if err != nil {
				b.Fatal(err)
			}
			if res := p.Wait(); res.ExitCode != 0 {
				b.Fatal(res)
			}
		}
	})
	b.Run("exec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOutputFlood measures draining 64 MiB of worker output into a
// log bounded to 1 MiB, against the same producer writing to /dev/null.
func BenchmarkOutputFlood(b *testing.B) {
	const size = 64 << 20
	script := "head -c 67108864 /dev/zero"
	b.Run("launch", func(b *testing.B) {
		b.SetBytes(size)
		log := filepath.Join(b.TempDir(), "s.log")
		for i := 0; i < b.N; i++ {
			p, err := Start(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, LogPath: log, MaxLogBytes: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			if res := p.Wait(); res.OutputBytes != size {
				b.Fatal(res)
			}
		}
	})
	b.Run("devnull", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			if err := exec.Command("/bin/sh", "-c", script+" >/dev/null").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package scope

import (
	"fmt"
	"testing"
)

// BenchmarkClassifyAndPatterns50k measures the pure part of applying a
// scope to a 50,000-file tree: classifying every path and computing the
// sparse-checkout lines.
func BenchmarkClassifyAndPatterns50k(b *testing.B) {
	files := make([]string, 0, 50100)
	for i := 0; i < 50000; i++ {
		d := i / 100
		files = append(files, fmt.Sprintf("top%d/dir%d/file%d.txt", d%10, d, i))
		if d%10 == 9 && i%100 == 0 {
			files = append(files, fmt.Sprintf("top9/dir%d/local.env", d))
		}
	}
	files = append(files, ".env", "config/prod.env", "config/app.yml", "secrets/key")
	spec := Spec{Write: []string{"top0/**", "top1/**"}, Exclude: []string{"**/*.env", "**/secrets/**"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(spec.SparsePatterns(files)) == 0 {
			b.Fatal("no patterns")
		}
	}
}

package gittest

import "slices"

// Median is the middle value of xs (the mean of the two middle ones for
// an even count; 0 for none): how the benchmarks that time pairs of runs
// take turns report their ratio, so that one run slowed by a busy disk
// does not decide it.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

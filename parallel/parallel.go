// Package parallel owns splitting CPU-bound loops over all cores: decoding
// and encoding thousands of JSON documents dominates large listings.
package parallel

import (
	"runtime"
	"sync"
)

// For runs f(0..n-1) in contiguous chunks, one per CPU. Small loops run
// inline. f must be safe to call concurrently for different i.
func For(n int, f func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 256 || workers < 2 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				f(i)
			}
		}(lo, hi)
	}
	wg.Wait()
}

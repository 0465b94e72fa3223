package main

import "strconv"

// plural counts n things in English: "1 command", "0 commands",
// "2 commands". one and many may carry a verb ("entity could").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

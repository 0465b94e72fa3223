// Package archtest owns the tests that keep the code's layering honest: they
// read the project's own source and fail when a package does git's work that
// belongs to another one, or when tests stop sharing one set of helpers
// (internal/gittest). It has no code of its own.
package archtest

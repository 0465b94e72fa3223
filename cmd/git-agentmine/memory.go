package main

// MemoryCmd groups the Memory Bank commands.
type MemoryCmd struct{}

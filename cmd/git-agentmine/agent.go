package main

// AgentCmd groups the agent definition commands.
type AgentCmd struct{}

// InitCmd is `init`.
type InitCmd struct{}

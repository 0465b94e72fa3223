module github.com/git-agentmine/git-agentmine

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/alecthomas/kong v1.17.0
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/fsnotify/fsnotify v1.10.1
	github.com/goccy/go-json v0.10.5
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.49.0
)

require golang.org/x/tools v0.26.0 // indirect

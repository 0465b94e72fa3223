package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// CompletionCmd is `completion`: it prints a shell completion script built
// from this binary's own grammar at run time, so the script can never name a
// command or flag the binary does not have.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"Shell to print the script for: bash, zsh or fish."`
}

// Run prints the completion script for the chosen shell.
func (c *CompletionCmd) Run(a *App, k *kong.Context) error {
	cmds := completionCommands(k.Model)
	var err error
	switch c.Shell {
	case "bash":
		err = writeBashCompletion(a.P.Out, cmds)
	case "zsh":
		err = writeZshCompletion(a.P.Out, cmds)
	case "fish":
		err = writeFishCompletion(a.P.Out, cmds)
	default:
		return exitcode.New(exitcode.Usage, fmt.Errorf("unknown shell %q", c.Shell), "use bash, zsh or fish")
	}
	if err != nil {
		return fmt.Errorf("writing the %s completion script: %w", c.Shell, err)
	}
	return nil
}

// compCommand is one visible command of the grammar, as completion sees it.
type compCommand struct {
	// Path is the command path without the program name ("task add"); ""
	// for the program itself.
	Path string
	// Subs are the visible subcommands, each with its aliases.
	Subs []compSub
	// Flags are the long and short spellings of every visible flag accepted
	// here, the inherited global flags included.
	Flags []string
	// ValueFlags are the spellings of the flags that take a value (the next
	// word is the value, not a command).
	ValueFlags []string
	// Values are the allowed values of the first positional argument, when it
	// is an enum.
	Values []string
	// FlagValues maps a value flag's spellings to the values it takes,
	// when they are a fixed set.
	FlagValues map[string][]string
	// IDKind is "task", "session" or "memory" when the command's
	// arguments are ids of that kind, completed from the repository.
	IDKind string
}

// compSub is a subcommand: its name, aliases and one-line help.
type compSub struct {
	Name    string
	Aliases []string
	Help    string
}

// completionCommands walks the grammar and returns every visible command,
// parents before children, in grammar order.
func completionCommands(app *kong.Application) []compCommand {
	var out []compCommand
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		c := compCommand{Path: path}
		for _, ch := range n.Children {
			if ch.Hidden || ch.Type != kong.CommandNode {
				continue
			}
			c.Subs = append(c.Subs, compSub{Name: ch.Name, Aliases: ch.Aliases, Help: ch.Help})
		}
		for _, group := range n.AllFlags(true) {
			for _, f := range group {
				names := []string{"--" + f.Name}
				for _, al := range f.Aliases {
					names = append(names, "--"+al)
				}
				if f.Short != 0 {
					names = append(names, "-"+string(f.Short))
				}
				c.Flags = append(c.Flags, names...)
				if !f.IsBool() && !f.IsCounter() {
					c.ValueFlags = append(c.ValueFlags, names...)
					if vs := flagValues(path, f); len(vs) > 0 {
						if c.FlagValues == nil {
							c.FlagValues = map[string][]string{}
						}
						for _, n := range names {
							c.FlagValues[n] = vs
						}
					}
				}
			}
		}
		if len(n.Positional) > 0 && n.Positional[0].Enum != "" {
			c.Values = n.Positional[0].EnumSlice()
		}
		if len(n.Positional) > 0 {
			c.IDKind = idKind(n.Positional[0].Help)
		}
		out = append(out, c)
		for _, ch := range n.Children {
			if ch.Hidden || ch.Type != kong.CommandNode {
				continue
			}
			walk(ch, strings.TrimSpace(path+" "+ch.Name))
		}
	}
	walk(app.Node, "")
	return out
}

// flagValues returns the fixed set of values flag f takes at path, or nil:
// its enum, else the set the core packages define for its name.
func flagValues(path string, f *kong.Flag) []string {
	if f.Enum != "" {
		return f.EnumSlice()
	}
	group := strings.Fields(path + " x")[0]
	switch {
	case f.Name == "type" && group == "task":
		return tasks.Types
	case f.Name == "priority" && group == "task":
		return tasks.Priorities
	case f.Name == "status" && group == "task":
		out := []string{}
		for _, s := range status.All {
			out = append(out, string(s))
		}
		return append(out, "ready", "blocked")
	case f.Name == "status" && group == "memory":
		return memory.Statuses
	case f.Name == "client":
		return agents.Clients
	case f.Name == "isolation":
		return agents.IsolationLevels
	}
	return nil
}

// idKind reads from a positional argument's help what its ids name.
func idKind(help string) string {
	h := strings.ToLower(help)
	switch {
	case strings.HasPrefix(h, "session id"):
		return "session"
	case strings.HasPrefix(h, "memory id"):
		return "memory"
	case strings.HasPrefix(h, "task id"), strings.HasPrefix(h, "task to"), strings.HasPrefix(h, "root task"),
		strings.HasPrefix(h, "target tasks"):
		return "task"
	}
	return ""
}

// words returns what completes a non-flag word at this command: the
// subcommands with their aliases, or the positional's enum values.
func (c compCommand) words() []string {
	var w []string
	for _, s := range c.Subs {
		w = append(w, s.Name)
		w = append(w, s.Aliases...)
	}
	return append(w, c.Values...)
}

// childCases lists, for every parent path, the words that lead to each
// child: "task list" is reached from "task" by "list" or "ls".
func childCases(cmds []compCommand) [][3]string {
	var out [][3]string // parent, word, child path
	for _, c := range cmds {
		for _, s := range c.Subs {
			child := strings.TrimSpace(c.Path + " " + s.Name)
			for _, w := range append([]string{s.Name}, s.Aliases...) {
				out = append(out, [3]string{c.Path, w, child})
			}
		}
	}
	return out
}

const completionHeader = `# %s completion for git-agentmine, generated by 'git agentmine completion %s'
# from the command grammar of the binary that printed it: regenerate it after
# upgrading. It completes commands, subcommands and flags of both
# 'git agentmine ...' and 'git-agentmine ...'.
`

// shFunctions writes the lookup functions shared by the bash and zsh
// scripts; they use only syntax both shells read the same way.
func shFunctions(w io.Writer, cmds []compCommand) {
	io.WriteString(w, `
# __git_agentmine_child PATH WORD: set REPLY to the command path WORD leads
# to from PATH, or fail.
__git_agentmine_child() {
	case "$1/$2" in
`)
	for _, cc := range childCases(cmds) {
		fmt.Fprintf(w, "\t%s) REPLY=%s ;;\n", shQuote(cc[0]+"/"+cc[1]), shQuote(cc[2]))
	}
	io.WriteString(w, `	*) return 1 ;;
	esac
}

# __git_agentmine_takes_value PATH FLAG: succeed when FLAG takes a value at
# PATH, so the next word is that value.
__git_agentmine_takes_value() {
	case "$1" in
`)
	for _, c := range cmds {
		if len(c.ValueFlags) == 0 {
			continue
		}
		fmt.Fprintf(w, "\t%s) case \"$2\" in %s) return 0 ;; esac ;;\n", shQuote(c.Path), strings.Join(quoteAll(c.ValueFlags), "|"))
	}
	io.WriteString(w, `	esac
	return 1
}

# __git_agentmine_values PATH FLAG: print the values FLAG takes at PATH,
# when they are a fixed set.
__git_agentmine_values() {
	case "$1" in
`)
	for _, c := range cmds {
		if len(c.FlagValues) == 0 {
			continue
		}
		fmt.Fprintf(w, "\t%s) case \"$2\" in\n", shQuote(c.Path))
		for _, f := range sortedKeys(c.FlagValues) {
			fmt.Fprintf(w, "\t\t%s) printf '%%s\\n' %s ;;\n", shQuote(f), shQuote(strings.Join(c.FlagValues[f], " ")))
		}
		io.WriteString(w, "\t\tesac ;;\n")
	}
	io.WriteString(w, `	esac
}

# __git_agentmine_ids PATH: print the ids the arguments at PATH name, read
# from the repository (nothing outside one).
__git_agentmine_ids() {
	case "$1" in
`)
	for _, c := range cmds {
		if c.IDKind != "" && len(c.Subs) == 0 {
			fmt.Fprintf(w, "\t%s) git-agentmine %s list -q 2>/dev/null || : ;;\n", shQuote(c.Path), c.IDKind)
		}
	}
	io.WriteString(w, `	esac
}

# __git_agentmine_flags PATH, __git_agentmine_subs PATH: print the flags and
# the words (subcommands, argument values) that complete at PATH.
__git_agentmine_flags() {
	case "$1" in
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "\t%s) printf '%%s\\n' %s ;;\n", shQuote(c.Path), shQuote(strings.Join(c.Flags, " ")))
	}
	io.WriteString(w, `	esac
}
__git_agentmine_subs() {
	case "$1" in
`)
	for _, c := range cmds {
		if ws := c.words(); len(ws) > 0 {
			fmt.Fprintf(w, "\t%s) printf '%%s\\n' %s ;;\n", shQuote(c.Path), shQuote(strings.Join(ws, " ")))
		}
	}
	io.WriteString(w, `	esac
}

# __git_agentmine_words CUR WORD...: print the candidates for the current
# word CUR, given the words typed before it (after the program name).
__git_agentmine_words() {
	local cur="$1" path="" skip="" w REPLY
	shift
	for w in "$@"; do
		if [ -n "$skip" ]; then
			skip=""
			continue
		fi
		case "$w" in
		--*=*) ;;
		-*) __git_agentmine_takes_value "$path" "$w" && skip="$w" ;;
		*) __git_agentmine_child "$path" "$w" && path="$REPLY" ;;
		esac
	done
	if [ -n "$skip" ]; then
		# the current word is a flag's value
		__git_agentmine_values "$path" "$skip"
		return 0
	fi
	case "$cur" in
	-*) __git_agentmine_flags "$path" ;;
	*)
		__git_agentmine_subs "$path"
		__git_agentmine_ids "$path"
		;;
	esac
}
`)
}

func writeBashCompletion(w io.Writer, cmds []compCommand) error {
	fmt.Fprintf(w, completionHeader, "bash", "bash")
	io.WriteString(w, `#
# Load it in ~/.bashrc (after git's own completion, for 'git agentmine'):
#   source <(git agentmine completion bash)
`)
	shFunctions(w, cmds)
	_, err := io.WriteString(w, `
# _git_agentmine is what git's bash completion calls for 'git agentmine ...'.
_git_agentmine() {
	local i start=1 cands
	if [ -n "${__git_cmd_idx-}" ]; then
		start=$((__git_cmd_idx + 1))
	else
		for ((i = 1; i < cword; i++)); do
			if [ "${words[i]}" = agentmine ]; then
				start=$((i + 1))
				break
			fi
		done
	fi
	cands=$(__git_agentmine_words "${words[cword]}" "${words[@]:start:cword-start}")
	if declare -F __gitcomp >/dev/null; then
		__gitcomp "$cands" "" "${words[cword]}"
	else
		COMPREPLY=($(compgen -W "$cands" -- "${words[cword]}"))
	fi
}

# __git_agentmine_bash completes 'git-agentmine ...' typed directly.
__git_agentmine_bash() {
	local cur="${COMP_WORDS[COMP_CWORD]}"
	COMPREPLY=($(compgen -W "$(__git_agentmine_words "$cur" "${COMP_WORDS[@]:1:COMP_CWORD-1}")" -- "$cur"))
}
complete -o default -F __git_agentmine_bash git-agentmine
`)
	return err
}

func writeZshCompletion(w io.Writer, cmds []compCommand) error {
	fmt.Fprintf(w, completionHeader, "zsh", "zsh")
	io.WriteString(w, `#
# Load it in ~/.zshrc, after compinit:
#   source <(git agentmine completion zsh)
`)
	shFunctions(w, cmds)
	_, err := io.WriteString(w, `
# __git_agentmine_zsh completes from the words after the program name.
__git_agentmine_zsh() {
	local -a cands
	cands=(${="$(__git_agentmine_words "${words[CURRENT]}" "${(@)words[$1,CURRENT-1]}")"})
	if (( ${#cands} )); then
		compadd -a cands
	else
		_files
	fi
}

# _git-agentmine is what zsh's git completion calls for 'git agentmine ...'
# (its words start at the subcommand).
_git-agentmine() { __git_agentmine_zsh 2 }

# _git_agentmine_direct completes 'git-agentmine ...' typed directly.
_git_agentmine_direct() { __git_agentmine_zsh 2 }
if (( ${+functions[compdef]} )); then
	compdef _git_agentmine_direct git-agentmine
fi
`)
	return err
}

func writeFishCompletion(w io.Writer, cmds []compCommand) error {
	fmt.Fprintf(w, completionHeader, "fish", "fish")
	io.WriteString(w, `#
# Load it with:
#   git agentmine completion fish | source
# or save it as ~/.config/fish/completions/git-agentmine.fish.

function __git_agentmine_child --argument-names path word
    switch "$path/$word"
`)
	for _, cc := range childCases(cmds) {
		fmt.Fprintf(w, "        case %s\n            echo %s\n", fishQuote(cc[0]+"/"+cc[1]), fishQuote(cc[2]))
	}
	io.WriteString(w, `        case '*'
            return 1
    end
end

function __git_agentmine_takes_value --argument-names path flag
    switch "$path"
`)
	for _, c := range cmds {
		if len(c.ValueFlags) == 0 {
			continue
		}
		fmt.Fprintf(w, "        case %s\n            contains -- $flag %s; and return 0\n", fishQuote(c.Path), strings.Join(fishQuoteAll(c.ValueFlags), " "))
	}
	io.WriteString(w, `    end
    return 1
end

function __git_agentmine_values --argument-names path flag
    switch "$path"
`)
	for _, c := range cmds {
		if len(c.FlagValues) == 0 {
			continue
		}
		fmt.Fprintf(w, "        case %s\n            switch $flag\n", fishQuote(c.Path))
		for _, f := range sortedKeys(c.FlagValues) {
			fmt.Fprintf(w, "                case %s\n                    printf '%%s\\n' %s\n", fishQuote(f), strings.Join(fishQuoteAll(c.FlagValues[f]), " "))
		}
		io.WriteString(w, "            end\n")
	}
	io.WriteString(w, `    end
end

function __git_agentmine_ids --argument-names path
    switch "$path"
`)
	for _, c := range cmds {
		if c.IDKind != "" && len(c.Subs) == 0 {
			fmt.Fprintf(w, "        case %s\n            git-agentmine %s list -q 2>/dev/null\n", fishQuote(c.Path), c.IDKind)
		}
	}
	io.WriteString(w, `    end
end

function __git_agentmine_flags --argument-names path
    switch "$path"
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "        case %s\n            printf '%%s\\n' %s\n", fishQuote(c.Path), strings.Join(fishQuoteAll(c.Flags), " "))
	}
	io.WriteString(w, `    end
end

function __git_agentmine_subs --argument-names path
    switch "$path"
`)
	for _, c := range cmds {
		var ws []string
		for _, s := range c.Subs {
			for _, n := range append([]string{s.Name}, s.Aliases...) {
				ws = append(ws, fishQuote(n+"\t"+s.Help))
			}
		}
		ws = append(ws, fishQuoteAll(c.Values)...)
		if len(ws) > 0 {
			fmt.Fprintf(w, "        case %s\n            printf '%%s\\n' %s\n", fishQuote(c.Path), strings.Join(ws, " "))
		}
	}
	_, err := io.WriteString(w, `    end
end

function __git_agentmine_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    # Skip the program: git-agentmine, or git [options] agentmine.
    set -l start 2
    if test "$words[1]" = git
        set -l i (contains -i -- agentmine $words)
        and set start (math $i + 1)
    end
    set -l path ''
    set -l skip ''
    for i in (seq $start (count $words))
        set -l w $words[$i]
        if test -n "$skip"
            set skip ''
            continue
        end
        switch $w
            case '--*=*'
            case '-*'
                __git_agentmine_takes_value "$path" $w; and set skip $w
            case '*'
                set -l next (__git_agentmine_child "$path" $w); and set path $next
        end
    end
    if test -n "$skip"
        __git_agentmine_values "$path" $skip
        return 0
    end
    switch "$cur"
        case '-*'
            __git_agentmine_flags "$path"
        case '*'
            set -l subs (__git_agentmine_subs "$path") (__git_agentmine_ids "$path")
            if test (count $subs) -gt 0
                printf '%s\n' $subs
            else
                __fish_complete_path "$cur"
            end
    end
end

# 'git agentmine ...': registered on git directly, since not every fish
# release hands custom git subcommands over to their own completion.
function __git_agentmine_in_git
    set -l words (commandline -opc)
    test "$words[1]" = git; and contains -- agentmine $words
end

complete -c git-agentmine -f -a '(__git_agentmine_complete)'
complete -c git -f -n __git_agentmine_in_git -a '(__git_agentmine_complete)'
`)
	return err
}

// shQuote quotes s for sh/bash/zsh as one word.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = shQuote(x)
	}
	return out
}

// fishQuote quotes s for fish as one word (fish's single quotes escape only
// \' and \\).
func fishQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "'", `\'`)
	if strings.Contains(s, "\t") {
		// A tab separates a candidate from its description; fish's single
		// quotes keep it literal, so close, emit \t, reopen.
		s = strings.ReplaceAll(s, "\t", `'\t'`)
	}
	return "'" + s + "'"
}

func fishQuoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fishQuote(x)
	}
	return out
}

// sortedKeys returns m's keys in order, so the scripts are stable.
func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

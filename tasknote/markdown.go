package tasknote

import (
	"fmt"
	"strings"
	"time"
)

// Markdown renders the note as seed 004 lays it out: header, summary,
// description, acceptance criteria as a checklist, one table row per
// attempt, usage and the final diff stat.
func (n Note) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Task Note - %s - %s\n\n", n.ShortID, n.Title)
	fmt.Fprintf(&b, "- Task ID: %s\n- Title: %s\n- Started At: %s\n- Finished At: %s\n- State: %s\n",
		n.Task, n.Title, stamp(n.Started), stamp(n.Finished), n.State)
	if n.Reason != "" {
		fmt.Fprintf(&b, "- Reason: %s\n", n.Reason)
	}
	fmt.Fprintf(&b, "\n## 1. Summary\n\n%s\n", n.Summary)
	desc := strings.TrimSpace(n.Description)
	if desc == "" {
		desc = "(none)"
	}
	fmt.Fprintf(&b, "\n## 2. Description\n\n%s\n", desc)
	b.WriteString("\n## 3. Acceptance criteria\n\n")
	if len(n.Criteria) == 0 {
		b.WriteString("(none)\n")
	}
	for _, c := range n.Criteria {
		box := " "
		if c.Met {
			box = "x"
		}
		fmt.Fprintf(&b, "- [%s] %s: %s\n", box, c.ID, c.Text)
	}
	b.WriteString("\n## 4. Attempts\n\n")
	if len(n.Attempts) == 0 {
		b.WriteString("(none)\n")
	} else {
		b.WriteString("| # | session | agent | exit | DoD | scope | review | duration | usage |\n")
		b.WriteString("|---|---------|-------|------|-----|-------|--------|----------|-------|\n")
		for i, a := range n.Attempts {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", i+1, short(a.Session), cell(a.Agent),
				exitText(a), orDash(a.DoD), orDash(a.Scope), orDash(a.Review), duration(a), usageText(a))
		}
		listed := false
		for i, a := range n.Attempts {
			if a.Reason == "" && len(a.ReviewReasons) == 0 {
				continue
			}
			var parts []string
			if a.Reason != "" {
				parts = append(parts, a.Reason)
			}
			if len(a.ReviewReasons) > 0 {
				parts = append(parts, fmt.Sprintf("review %s by %s: %s", a.Review, a.Reviewer, strings.Join(a.ReviewReasons, "; ")))
			}
			if !listed {
				b.WriteString("\n")
				listed = true
			}
			fmt.Fprintf(&b, "- attempt %d (%s): %s\n", i+1, short(a.Session), strings.Join(parts, "; "))
		}
	}
	bestOfMarkdown(&b, n)
	if n.Runs > 0 {
		fmt.Fprintf(&b, "\nPlanner and reviewer runs: %d\n\n", n.Runs)
		b.WriteString("| session | role | agent | exit | duration | reviewed | verdict |\n")
		b.WriteString("|---------|------|-------|------|----------|----------|---------|\n")
		for _, c := range n.Calls {
			exit, dur := "running", "-"
			if c.ExitCode != nil {
				exit = fmt.Sprint(*c.ExitCode)
				dur = (time.Duration(c.Seconds * float64(time.Second))).Round(100 * time.Millisecond).String()
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", short(c.Session), c.Role, cell(c.Agent), exit, dur, orDash(short(c.Reviews)), orDash(c.Verdict))
		}
	}
	if n.Usage != nil {
		fmt.Fprintf(&b, "\nUsage (all sessions): %s\n", n.Usage)
	}
	b.WriteString("\n## 5. Final diff\n\n")
	if n.DiffStat == "" {
		b.WriteString("(no commits)\n")
	} else {
		fmt.Fprintf(&b, "```\n%s\n```\n", strings.TrimRight(n.DiffStat, "\n"))
	}
	return b.String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func orDash(s string) string { return cell(s) }

func exitText(a Attempt) string {
	switch {
	case a.ExitCode == nil:
		return "running"
	case a.TimedOut:
		return fmt.Sprintf("%d (timeout)", *a.ExitCode)
	case a.Signal != "":
		return fmt.Sprintf("%d (%s)", *a.ExitCode, a.Signal)
	}
	return fmt.Sprint(*a.ExitCode)
}

func duration(a Attempt) string {
	if a.ExitCode == nil {
		return "-"
	}
	return (time.Duration(a.Seconds * float64(time.Second))).Round(100 * time.Millisecond).String()
}

func usageText(a Attempt) string {
	if a.Usage == nil {
		return "-"
	}
	return a.Usage.String()
}

// bestOfMarkdown renders the best-of rounds: per round how it ended, then
// one row per attempt with its verdict, diff size, usage, and whether it
// was chosen and why.
func bestOfMarkdown(b *strings.Builder, n Note) {
	for i, rd := range n.BestOf {
		fmt.Fprintf(b, "\n### Round %d: best of %d\n\n%s\n", i+1, rd.K, rd.Summary())
		if rd.Decided == nil {
			continue
		}
		b.WriteString("\n| attempt | session | agent | verdict | diff lines | diff files | usage | chosen | why |\n")
		b.WriteString("|---------|---------|-------|---------|------------|------------|-------|--------|-----|\n")
		for _, c := range rd.Decided.Candidates {
			chosen := "no"
			if c.Chosen {
				chosen = "yes"
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %d | %d | %s | %s | %s |\n", c.Slot, short(c.Session), cell(c.Agent), cell(c.Verdict),
				c.Lines, c.Files, cell(c.UsageText()), chosen, cell(c.Why))
		}
	}
}

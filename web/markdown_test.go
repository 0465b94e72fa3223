package web

import (
	"strings"
	"testing"
)

// TestMarkdown: a description's Markdown becomes HTML; raw HTML, script
// and event-handler attributes, and links and images that could run code
// do not reach the page.
func TestMarkdown(t *testing.T) {
	md := newMarkdown()
	for _, c := range []struct {
		in        string
		want, not []string
	}{
		{"# Title\n\nSome *em* and **strong** and `code`.", []string{"<h1>Title</h1>", "<em>em</em>", "<strong>strong</strong>", "<code>code</code>"}, nil},
		{"- one\n- two\n\n1. first", []string{"<ul>", "<li>one</li>", "<ol>"}, nil},
		{"```\n<b>x</b>\n```", []string{"<pre><code>&lt;b&gt;x&lt;/b&gt;"}, []string{"<b>"}},
		{"[docs](https://example.com/a?b=1&c=2) and https://example.org", []string{`<a href="https://example.com/a?b=1&amp;c=2">docs</a>`, `<a href="https://example.org">`}, nil},
		{"| a | b |\n|---|---|\n| 1 | 2 |", []string{"<table>", "<td>1</td>"}, nil},
		{"<script>alert(1)</script>\n\ntext <b onclick=\"x()\">bold</b>", []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "text &lt;b onclick=&#34;x()&#34;&gt;bold&lt;/b&gt;"}, []string{"<script", "<b"}},
		{"<img src=x onerror=alert(1)>", []string{"&lt;img src=x onerror=alert(1)&gt;"}, []string{"<img"}},
		{"[x](javascript:alert(1)) [y](vbscript:msgbox) [z](file:///etc/passwd)", nil, []string{"javascript:", "vbscript:", "file:"}},
		{"![i](javascript:alert(1))", nil, []string{"javascript:"}},
		{"<div>\n<iframe src=\"https://evil.example\"></iframe>\n</div>", []string{"&lt;iframe"}, []string{"<iframe", "<div"}},
	} {
		got := string(markdown(md, c.in))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: %q lacks %q", c.in, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(strings.ToLower(got), n) {
				t.Errorf("%q: %q contains %q", c.in, got, n)
			}
		}
	}
}

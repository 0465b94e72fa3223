package web

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// Task descriptions are Markdown. They are rendered with goldmark
// (CommonMark, with GitHub's tables, strikethrough, autolinks and task
// lists) in its safe mode, where a link or image whose address could run
// code (javascript:, vbscript:, file:, data: other than images) loses its
// address; raw HTML, inline or as a block, is shown as the text it is
// (escaped), never as markup. The page's Content-Security-Policy still
// forbids inline scripts and styles and images from elsewhere.

// newMarkdown returns the board's Markdown renderer (safe to use from many
// requests at once).
func newMarkdown() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))))
}

// markdown renders a task's Markdown text as HTML safe to put on a page.
// Text that does not render is shown as it is, escaped.
func markdown(md goldmark.Markdown, src string) template.HTML {
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(b.String())
}

// rawAsText renders raw HTML as escaped text: a description that contains
// markup shows it, and it does nothing.
type rawAsText struct{}

// RegisterFuncs takes over goldmark's renderers of raw HTML.
func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := 0; i < segs.Len(); i++ {
				seg := segs.At(i)
				template.HTMLEscape(w, seg.Value(src))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			w.WriteString("<pre class=\"raw\">")
			lines := b.Lines()
			for i := 0; i < lines.Len(); i++ {
				line := lines.At(i)
				template.HTMLEscape(w, line.Value(src))
			}
			if b.HasClosure() {
				template.HTMLEscape(w, b.ClosureLine.Value(src))
			}
			w.WriteString("</pre>\n")
		}
		return ast.WalkContinue, nil
	})
}

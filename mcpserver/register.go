package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/verify"
)

// addTool adds a tool whose arguments decode into In and whose result is
// Out: the input and output schemas are generated from the two types, the
// arguments are checked against In before fn runs (each mistake named in
// one line), and fn's error becomes a tool error. A panic in fn is a tool
// error too: the server keeps serving.
func addTool[In, Out any](s *Server, t *mcp.Tool, fn func(c *call, in In) (Out, error)) {
	in := schemaFor[In]()
	notNull(in)
	t.InputSchema = in
	t.OutputSchema = schemaFor[Out]()
	args := argsOf[In](t.Name)
	s.mcp.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = toolError(fmt.Errorf("internal error in %s: %v", t.Name, r)), nil
			}
		}()
		var in In
		if err := args.decode(req.Params.Arguments, &in); err != nil {
			return toolError(err), nil
		}
		out, err := fn(&call{ctx: ctx, s: s}, in)
		if err != nil {
			return toolError(err), nil
		}
		data, err := encode(out)
		if err != nil {
			return toolError(fmt.Errorf("encoding the result of %s: %w", t.Name, err)), nil
		}
		// The text is the same JSON: clients that show a model only the
		// content (not structuredContent) still give it the whole result.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}},
			StructuredContent: json.RawMessage(data)}, nil
	})
	s.names = append(s.names, t.Name)
}

// encode is a tool's result as JSON, with no HTML escaping, as the
// command line writes it.
func encode(v any) ([]byte, error) { return output.MarshalCompact(v) }

// schemaFor is the JSON schema of T as tools/list publishes it: generated
// from T's fields and their json and jsonschema tags, with a session
// outcome's raw verdicts (scope, dod) typed as the verdicts they hold,
// leniently (they are passed through as the note recorded them).
func schemaFor[T any]() *jsonschema.Schema {
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}}
	s, err := jsonschema.For[T](opts)
	if err != nil {
		panic(fmt.Sprintf("schema of %v: %v", reflect.TypeFor[T](), err))
	}
	scope, err := jsonschema.For[verify.Verdict](opts)
	if err != nil {
		panic(fmt.Sprintf("schema of the scope verdict: %v", err))
	}
	dod, err := jsonschema.For[verify.DoDResult](opts)
	if err != nil {
		panic(fmt.Sprintf("schema of the DoD result: %v", err))
	}
	lenient(scope)
	lenient(dod)
	typeVerdicts(s, scope, dod)
	return s
}

// lenient makes a schema of stored data describe its types without
// demanding every field or refusing others: an outcome note may have been
// written by an older or newer release, in any clone.
func lenient(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.Required = nil
	s.AdditionalProperties = nil
	for _, p := range s.Properties {
		lenient(p)
	}
	lenient(s.Items)
}

// typeVerdicts gives every outcome inside s (an object with exit_code,
// scope and dod) the schemas of the verdicts its raw scope and dod fields
// hold.
func typeVerdicts(s, scope, dod *jsonschema.Schema) {
	if s == nil {
		return
	}
	p := s.Properties
	if p["exit_code"] != nil && p["scope"] != nil && p["dod"] != nil {
		p["scope"], p["dod"] = scope, dod
	}
	for _, sub := range p {
		typeVerdicts(sub, scope, dod)
	}
	typeVerdicts(s.Items, scope, dod)
	typeVerdicts(s.AdditionalProperties, scope, dod)
}

// notNull makes every nullable type of an input schema its one non-null
// type: an argument is left out rather than given as null, and clients
// that map tool schemas onto a single-type dialect (Gemini's function
// declarations) reject type arrays. The arguments' decoder still takes
// null for an argument that can be absent.
func notNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		notNull(p)
	}
	notNull(s.Items)
}

// args describes a tool's arguments: the JSON names of In's fields, which
// are required (no omitempty) and their Go types.
type args struct {
	tool     string
	names    []string
	required map[string]bool
	types    map[string]reflect.Type
}

func argsOf[In any](tool string) args {
	a := args{tool: tool, required: map[string]bool{}, types: map[string]reflect.Type{}}
	t := reflect.TypeFor[In]()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		a.names = append(a.names, name)
		a.types[name] = f.Type
		if !strings.Contains(","+opts+",", ",omitempty,") {
			a.required[name] = true
		}
	}
	return a
}

// decode checks raw against the arguments and decodes it into v. Each
// mistake is a usage error naming the tool and the argument: not an
// object, an argument the tool does not take, a required one missing, a
// value of the wrong type.
func (a args) decode(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return a.usage("the arguments must be a JSON object, not %s", jsonKind(raw))
	}
	var unknown []string
	for k := range m {
		if _, ok := a.types[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		takes := "no arguments"
		if len(a.names) > 0 {
			takes = "only " + strings.Join(a.names, ", ")
		}
		return a.usage("unknown argument %q (it takes %s)", unknown[0], takes)
	}
	for _, n := range a.names {
		if _, ok := m[n]; !ok && a.required[n] {
			return a.usage("missing required argument %q", n)
		}
	}
	for _, n := range a.names {
		val, ok := m[n]
		if !ok {
			continue
		}
		t := a.types[n]
		if bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
			if k := t.Kind(); k != reflect.Pointer && k != reflect.Slice && k != reflect.Map {
				return a.usage("argument %q must be %s, not null", n, describe(t))
			}
			continue
		}
		if err := json.Unmarshal(val, reflect.New(t).Interface()); err != nil {
			return a.usage("argument %q must be %s, not %s", n, describe(t), jsonKind(val))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return a.usage("%v", err)
	}
	return nil
}

func (a args) usage(format string, x ...any) error {
	return exitcode.New(exitcode.Usage, fmt.Errorf("%s: "+format, append([]any{a.tool}, x...)...), "")
}

// describe names the JSON a Go type takes: "a string", "an array of
// strings", "an integer".
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describe(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		e := strings.TrimPrefix(strings.TrimPrefix(describe(t.Elem()), "an "), "a ")
		return "an array of " + e + "s"
	}
	return "an object"
}

// jsonKind names the kind of a JSON value as a person would: "a string",
// "a number (1.5)", "an array holding a number".
func jsonKind(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "malformed JSON"
	}
	switch x := v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number (" + string(bytes.TrimSpace(raw)) + ")"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				b, _ := json.Marshal(e)
				return "an array holding " + jsonKind(b)
			}
		}
		return "an array"
	}
	return "an object"
}

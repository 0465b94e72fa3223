package main

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A command line that names one command plainly is parsed here, without
// kong: kong builds its model of even one command's grammar by reflection
// on every run, and building it and parsing with it took 0.78 ms of task
// show's 7 ms (timed in the process, a board of one task, 50 runs);
// BenchmarkTaskShowOneTask went from 3.73-3.77x to 3.53-3.56x (three
// rounds of 200 runs, alternating the builds, load 2.5 to 4.3). What this
// parser takes it parses as kong does: the same names and short names,
// values, defaults and positional arguments, and the same Run is called
// with the same App. Whatever it has the least doubt about (a
// flag it does not know, a value that starts with "-", a type, tag or hook
// it does not handle, an argument missing or left over) it declines, and
// kong parses the line as before, so every refusal is still kong's.
// TestDirectParseMatchesKong holds the two to the same result for every
// command of the grammar.

// directCmd is a command line parsed without kong: the global flags, the
// command's path ("task show") and its Run.
type directCmd struct {
	g    *Globals
	path string
	run  func(*App) error
	leaf any // the command's struct (a pointer), as parsed
}

// directKeys are the struct tag keys the direct parser understands on a
// command's fields (the rest of a tag is help for people); a field with
// any other key (env, enum, type, required, xor, ...) sends the line to
// kong.
var directKeys = map[string]bool{
	"arg": true, "optional": true, "name": true, "short": true, "help": true, "default": true,
	"placeholder": true, "sep": true, "aliases": true, "hidden": true, "group": true,
}

// directCmdKeys are the keys understood on a group's command fields.
var directCmdKeys = map[string]bool{"cmd": true, "name": true, "aliases": true, "help": true, "hidden": true, "group": true}

// kongHooks are the methods kong looks for on commands and calls besides
// Run: a command with one of them goes to kong.
var kongHooks = []string{"BeforeReset", "BeforeResolve", "BeforeApply", "AfterApply", "AfterRun", "Validate", "Signature", "Help", "Decode"}

// runner is a command's Run as kong calls it with the App bound.
type runner interface{ Run(*App) error }

var (
	runnerType = reflect.TypeOf((*runner)(nil)).Elem()
	stringType = reflect.TypeOf("")
	boolType   = reflect.TypeOf(false)
	intType    = reflect.TypeOf(0)
	stringsT   = reflect.TypeOf([]string(nil))
)

// directField is one flag or positional argument of a command.
type directField struct {
	index []int
	typ   reflect.Type
	arg   bool
	names []string // long names: name (or the field's), then aliases
	short string
	def   string
	hasDf bool
	opt   bool
}

// directParse parses args (after helpOfDefault) when they are the global
// flags and one command, plainly; ok is false for anything else.
func directParse(args []string) (d directCmd, ok bool) {
	g := &Globals{}
	t := reflect.TypeOf(CLI{})
	var path []string
	var leaf reflect.Value
	var fields []directField
	var positional []string
	set := map[int]bool{}
	// kong turns bytes that are not UTF-8 into U+FFFD: a line with any is
	// left to it.
	for _, a := range args {
		if !utf8.ValidString(a) {
			return d, false
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" || a == "-" {
			return d, false
		}
		if a[0] == '-' {
			n, done := directGlobal(g, args, i)
			if done {
				i += n
				continue
			}
			if !leaf.IsValid() {
				return d, false
			}
			n, done = directFlag(leaf, fields, set, args, i)
			if !done {
				return d, false
			}
			i += n
			continue
		}
		if leaf.IsValid() {
			positional = append(positional, a)
			continue
		}
		f, found := directSub(t, a)
		if !found {
			return d, false
		}
		path = append(path, commandName(f))
		if isDirectGroup(f.Type) && len(path) == 1 {
			t = f.Type
			continue
		}
		if fields, ok = directFields(f.Type); !ok {
			return d, false
		}
		leaf = reflect.New(f.Type)
	}
	if !leaf.IsValid() || !directArgs(leaf, fields, set, positional) {
		return d, false
	}
	cmd := leaf.Interface().(runner)
	return directCmd{g: g, path: strings.Join(path, " "), run: cmd.Run, leaf: leaf.Interface()}, true
}

// directGlobal parses the global flag at args[i], if it is one, and
// returns how many more arguments it took.
func directGlobal(g *Globals, args []string, i int) (int, bool) {
	switch a := args[i]; {
	case a == "--json":
		g.JSON = true
	case a == "-q" || a == "--quiet":
		g.Quiet = true
	case a == "--no-color":
		g.NoColor = true
	case a == "-C" || a == "--dir":
		if i+1 >= len(args) || !plainValue(args[i+1]) {
			return 0, false
		}
		g.Dir = args[i+1]
		return 1, true
	case strings.HasPrefix(a, "--dir="):
		if !plainValue(a[len("--dir="):]) {
			return 0, false
		}
		g.Dir = a[len("--dir="):]
	default:
		return 0, false
	}
	return 0, true
}

// plainValue reports whether v is a flag's value kong takes as it is.
func plainValue(v string) bool { return v != "" && v[0] != '-' }

// directSub returns the command field of the struct t named word (by name
// or alias).
func directSub(t reflect.Type, word string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		if !tagKeysIn(f.Tag, directCmdKeys) {
			return f, false
		}
		if commandName(f) == word {
			return f, true
		}
		for _, al := range strings.Split(f.Tag.Get("aliases"), ",") {
			if al != "" && al == word {
				return f, true
			}
		}
	}
	return reflect.StructField{}, false
}

// isDirectGroup reports whether t is a command group of subcommands alone:
// a struct of command fields, with no methods.
func isDirectGroup(t reflect.Type) bool {
	if t.Kind() != reflect.Struct || t.NumMethod() > 0 || reflect.PointerTo(t).NumMethod() > 0 || t.NumField() == 0 {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		if _, ok := t.Field(i).Tag.Lookup("cmd"); !ok {
			return false
		}
	}
	return true
}

// directFields returns the flags and arguments of the command struct t,
// or false when t is anything but a command whose Run takes the App and
// whose fields are strings, bools, ints and unsplit string lists.
func directFields(t reflect.Type) ([]directField, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	// Asked by name, not by walking the methods: a method's reflect
	// type is built when it is looked at, which cost more than the rest of
	// the parse. Provide… methods (kong binds what they return) no command
	// has: TestDirectCommandsHaveNoProviders.
	pt := reflect.PointerTo(t)
	if !pt.Implements(runnerType) {
		return nil, false
	}
	for _, name := range kongHooks {
		if _, ok := pt.MethodByName(name); ok {
			return nil, false
		}
	}
	var out []directField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		df, ok := directFieldOf(f)
		if !ok {
			return nil, false
		}
		out = append(out, df)
	}
	return out, true
}

// directFieldOf is one field of a command struct as the direct parser
// takes it.
func directFieldOf(f reflect.StructField) (directField, bool) {
	if f.Anonymous || !tagKeysIn(f.Tag, directKeys) {
		return directField{}, false
	}
	switch f.Type {
	case stringType, boolType, intType:
	case stringsT:
		if f.Tag.Get("sep") != "none" {
			return directField{}, false
		}
	default:
		return directField{}, false
	}
	df := directField{index: f.Index, typ: f.Type}
	_, df.arg = f.Tag.Lookup("arg")
	_, df.opt = f.Tag.Lookup("optional")
	df.def, df.hasDf = f.Tag.Lookup("default")
	if df.hasDf && (f.Type != stringType && f.Type != intType || strings.Contains(df.def, "$") || df.arg) {
		return directField{}, false
	}
	if df.hasDf && f.Type == intType && !plainInt(df.def) {
		return directField{}, false
	}
	if df.arg {
		if f.Type != stringType {
			return directField{}, false
		}
		return df, true
	}
	if df.opt {
		return directField{}, false
	}
	df.names = []string{commandName(f)}
	for _, al := range strings.Split(f.Tag.Get("aliases"), ",") {
		if al != "" {
			df.names = append(df.names, al)
		}
	}
	df.short = f.Tag.Get("short")
	if len(df.short) > 1 {
		return directField{}, false
	}
	return df, true
}

// plainInt reports whether s is a decimal number as every integer parser
// reads it the same way (no sign, base prefix or leading zero).
func plainInt(s string) bool {
	if s == "" || len(s) > 9 || s[0] == '0' && len(s) > 1 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// directFlag parses the command's flag at args[i] into leaf and returns
// how many more arguments it took.
func directFlag(leaf reflect.Value, fields []directField, set map[int]bool, args []string, i int) (int, bool) {
	a := args[i]
	name, value, hasValue := a, "", false
	long := strings.HasPrefix(a, "--")
	if long {
		name, value, hasValue = strings.Cut(a[2:], "=")
	} else if len(a) == 2 {
		name = a[1:]
	} else {
		return 0, false
	}
	for fi, f := range fields {
		if f.arg || long && !contains(f.names, name) || !long && f.short != name {
			continue
		}
		took := 0
		if f.typ == boolType {
			if hasValue {
				return 0, false
			}
			value = "true"
		} else if !hasValue {
			if i+1 >= len(args) {
				return 0, false
			}
			value, took = args[i+1], 1
		}
		if !plainValue(value) || set[fi] && f.typ != stringsT && f.typ != boolType {
			return 0, false
		}
		if !directSet(leaf.Elem().FieldByIndex(f.index), f.typ, value) {
			return 0, false
		}
		set[fi] = true
		return took, true
	}
	return 0, false
}

// directSet stores value in v, a field of type typ.
func directSet(v reflect.Value, typ reflect.Type, value string) bool {
	switch typ {
	case stringType:
		v.SetString(value)
	case boolType:
		v.SetBool(true)
	case intType:
		if !plainInt(value) {
			return false
		}
		n, _ := strconv.Atoi(value)
		v.SetInt(int64(n))
	case stringsT:
		v.Set(reflect.Append(v, reflect.ValueOf(value)))
	default:
		return false
	}
	return true
}

// directArgs stores the positional arguments in order and the defaults of
// the flags not given; false when an argument is missing or left over.
func directArgs(leaf reflect.Value, fields []directField, set map[int]bool, positional []string) bool {
	for fi, f := range fields {
		v := leaf.Elem().FieldByIndex(f.index)
		switch {
		case f.arg && len(positional) > 0:
			v.SetString(positional[0])
			positional = positional[1:]
		case f.arg && !f.opt:
			return false
		case !f.arg && f.hasDf && !set[fi]:
			if !directSet(v, f.typ, f.def) {
				return false
			}
		}
	}
	return len(positional) == 0
}

// tagKeysIn reports whether every key of the struct tag is in keys.
func tagKeysIn(tag reflect.StructTag, keys map[string]bool) bool {
	s := string(tag)
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return true
		}
		colon := strings.Index(s, `:"`)
		if colon <= 0 || !keys[s[:colon]] {
			return false
		}
		s = s[colon+2:]
		end := -1
		for j := 0; j < len(s); j++ {
			if s[j] == '\\' {
				j++
				continue
			}
			if s[j] == '"' {
				end = j
				break
			}
		}
		if end < 0 {
			return false
		}
		s = s[end+1:]
	}
}

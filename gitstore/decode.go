package gitstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	fastjson "github.com/goccy/go-json"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// ErrNewerVersion marks a stored document whose schema version is newer
// than this binary understands: it must not be read, let alone rewritten.
var ErrNewerVersion = errors.New("newer schema version")

// ErrCorrupt marks a stored document that cannot be decoded: invalid JSON,
// no schema version, or values of the wrong type.
var ErrCorrupt = errors.New("corrupt document")

// docError is a document this binary cannot use. Its message names the
// kind and the reason; errors.Is matches its class (ErrNewerVersion or
// ErrCorrupt).
type docError struct {
	msg   string
	class error
	cause error
}

func (e *docError) Error() string { return e.msg }

// Is reports whether target is the error's class.
func (e *docError) Is(target error) bool { return target == e.class }

// Unwrap returns the parse error behind a corrupt document, if any.
func (e *docError) Unwrap() error { return e.cause }

// Corrupt returns the error for a document of kind k that was parsed but
// is not valid, with why it is not. It is what Decode returns for a broken
// document, for kinds that check more than JSON can.
func Corrupt(k Kind, why error) error {
	return exitcode.New(exitcode.State, &docError{msg: fmt.Sprintf("corrupt %s document: %v", k.Noun, why), class: ErrCorrupt, cause: why}, "")
}

// Document is implemented (on the pointer) by the types Decode fills: it
// reports the schema version, the "v" field, the document was decoded with.
type Document interface {
	DocVersion() int
}

// CanonicalDecoder is implemented (on the pointer) by document types that
// decode their canonical form (exact keys, each once) without the
// reflective decoder, whose first use in a process compiles a decoder for
// the type: a cost a one-document command pays in full. DecodeCanonical
// decodes into the zero value and reports false for anything it is not
// sure of; Decode then reads the document with the reflective decoder
// instead, which must give the same value whenever DecodeCanonical
// succeeds. It reports true only for valid JSON: Decode does not validate
// a document it read.
type CanonicalDecoder interface {
	DecodeCanonical(data []byte) bool
}

// Decode parses a stored document of kind k into a T, refusing one whose
// schema version (the "v" field) is missing or newer than k's. A newer
// document is refused as such (ErrNewerVersion) even when its fields no
// longer fit T; anything else that cannot be used is ErrCorrupt. Every
// failure has exit code State, and its message names the kind and the
// reason, not the entity, which callers name by its ref or id.
//
// The usual case costs one decode by the type's canonical decoder
// (CanonicalDecoder), whose scan validates as it goes; a document it does
// not read costs a validation by encoding/json and a decode by the fast
// decoder. The document is parsed again only to explain a refusal.
func Decode[T any, P interface {
	*T
	Document
}](k Kind, data []byte) (T, error) {
	var doc T
	err := DecodeTo[T, P](k, data, &doc)
	return doc, err
}

// DecodeTo is Decode into *dst, for a reader of many documents that keeps
// them in a slice of its own: the document is decoded in place instead of
// in a value of Decode's that escapes to the heap and is then copied. *dst
// is overwritten; on an error it is the zero value.
func DecodeTo[T any, P interface {
	*T
	Document
}](k Kind, data []byte, dst *T) error {
	var zero T
	*dst = zero
	var err error
	valid := utf8.Valid(data)
	canonical := false
	if c, ok := any(P(dst)).(CanonicalDecoder); ok && valid {
		// A document the canonical decoder reads is valid JSON
		// (jsonscan's scans follow JSON's grammar): no validation first.
		if canonical = c.DecodeCanonical(data); !canonical {
			*dst = zero
		}
	}
	switch {
	case canonical:
	case !json.Valid(data):
		// checkVersion says why. The fast decoder must never see broken
		// JSON: it accepts some, and a key that ends in a lone backslash
		// makes it read past the end of the input and panic.
		err = errors.New("not JSON")
	case valid:
		err = fastjson.Unmarshal(data, dst)
	default:
		// The fast decoder keeps the bytes of invalid UTF-8 in strings,
		// where encoding/json (which Encode and the merge of diverged
		// documents use) reads U+FFFD: only the standard reading makes
		// decode(encode(doc)) == doc.
		err = json.Unmarshal(data, dst)
	}
	if err == nil {
		if v := P(dst).DocVersion(); v >= 1 && v <= k.SchemaVersion() {
			return nil
		}
	}
	*dst = zero
	if verr := checkVersion(k, data); verr != nil {
		return verr
	}
	if err == nil {
		// The "v" field is fine but T did not report it: a T whose
		// DocVersion does not return its "v" field.
		err = fmt.Errorf("internal error: %T does not report its schema version", zero)
	}
	return Corrupt(k, err)
}

// checkVersion reads only the "v" field of data and says what is wrong
// with it, if anything: not JSON, missing, not a positive integer, or
// newer than k's.
func checkVersion(k Kind, data []byte) error {
	var probe struct {
		V json.RawMessage `json:"v"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return Corrupt(k, err)
	}
	raw := bytes.TrimSpace(probe.V)
	if len(raw) == 0 || string(raw) == "null" {
		return Corrupt(k, errors.New(`no schema version (field "v")`))
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return Corrupt(k, fmt.Errorf(`schema version (field "v") is %s, not a positive integer`, raw))
	}
	if v > k.SchemaVersion() {
		return exitcode.New(exitcode.State, &docError{
			msg:   fmt.Sprintf("%s document has schema version %d; this git-agentmine understands %d: upgrade it", k.Noun, v, k.SchemaVersion()),
			class: ErrNewerVersion,
		}, "")
	}
	return nil
}

package validate

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	neturl "net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/runstream/runstream/store"
)

// The JSON Schemas (Draft 2020-12) of RunEventWrite: envelope.schema.json
// for every event, and one file per known event type that $refs the
// envelope and types the payload fields of RunEvents v1 section 4.3. They
// are the source of truth for shape (ExecutionSemantics v1 Appendix A);
// validate.go adds the rules a schema cannot state.
//
//go:embed schemas/*.schema.json
var schemaFiles embed.FS

// schemaBaseURL is the base of every embedded schema's $id. Relative $refs
// ("envelope.schema.json#/$defs/...") resolve against it, so nothing is ever
// fetched from the network.
const schemaBaseURL = "https://github.com/runstream/runstream/store/schemas/"

// compiledSchemas is built on first use (about 4 ms and 1.5 MB of allocation, paid
// only by a process that validates: the API and the store's appends, never
// a projector or an ETL) and never modified after, so it is safe for
// concurrent use. A broken embedded schema is a programmer error and
// panics.
var compiledSchemas = sync.OnceValue(mustCompileSchemas)

// schemaSet holds each schema twice. The library's compilation of the files
// as written is the reference: it judges every write the accept path does
// not pass and explains the rejection with instance locations. The node
// compiled from the same file, flattened, is the accept path: for a
// typical event it decides a write is valid in about a tenth of the
// library's time (which is most of the append budget: over two hundred
// allocations per event). A write the node rejects is always re-judged by
// the library, so the node can only ever cost speed, never correctness, if
// it is stricter; TestSchemas_FastPathAgrees and the fuzzers check that it
// is never more lenient.
type schemaSet struct {
	envelope *jsonschema.Schema
	byType   map[string]*jsonschema.Schema

	fastEnvelope *node
	fastByType   map[string]*node
}

// schemaFor returns the schema a write of eventType is validated against:
// the type's own schema for the twelve known types, the envelope alone for
// anything else (forward compatibility: docs/CONTRACT.md, "Events").
func schemaFor(eventType any) (*jsonschema.Schema, *node) {
	set := compiledSchemas()
	if s, ok := eventType.(string); ok {
		if sch, ok := set.byType[s]; ok {
			return sch, set.fastByType[s]
		}
	}
	return set.envelope, set.fastEnvelope
}

func mustCompileSchemas() schemaSet {
	set, err := compileSchemas(schemaFiles)
	if err != nil {
		panic("store: compiling embedded JSON Schemas: " + err.Error())
	}
	return set
}

// compileSchemas compiles the schema files in fsys, with the library and as
// accept-path nodes.
func compileSchemas(fsys fs.FS) (schemaSet, error) {
	names, err := fs.Glob(fsys, "schemas/*.schema.json")
	if err != nil {
		return schemaSet{}, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// Draft 2020-12 treats format as an annotation unless asked; emittedAt,
	// startedAt and friends must be asserted. date-time is replaced by the
	// stricter check every Go reader of the log can rely on.
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: validateDateTimeFormat})
	c.UseRegexpEngine(compilePattern)

	docs := make(map[string]any, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return schemaSet{}, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return schemaSet{}, fmt.Errorf("parsing %s: %w", name, err)
		}
		url := schemaBaseURL + path.Base(name)
		if obj, ok := doc.(map[string]any); !ok || obj["$id"] != url {
			return schemaSet{}, fmt.Errorf("%s: $id must be %q", name, url)
		}
		if err := c.AddResource(url, doc); err != nil {
			return schemaSet{}, fmt.Errorf("adding %s: %w", name, err)
		}
		docs[url] = doc
	}
	types := append(append([]string(nil), store.RunEventTypes...), store.StepEventTypes...)
	if len(docs) != len(types)+1 {
		return schemaSet{}, fmt.Errorf("found %d schema files, want %d (the envelope and one per known event type)", len(docs), len(types)+1)
	}

	compile := func(url string) (*jsonschema.Schema, *node, error) {
		sch, err := c.Compile(url)
		if err != nil {
			return nil, nil, fmt.Errorf("compiling %s: %w", url, err)
		}
		flat, err := flattenSchema(docs, url)
		if err != nil {
			return nil, nil, fmt.Errorf("flattening %s: %w", url, err)
		}
		n, err := compileNode(flat)
		if err != nil {
			return nil, nil, fmt.Errorf("compiling the accept path of %s: %w", url, err)
		}
		return sch, n, nil
	}
	set := schemaSet{
		byType:     make(map[string]*jsonschema.Schema, len(types)),
		fastByType: make(map[string]*node, len(types)),
	}
	if set.envelope, set.fastEnvelope, err = compile(schemaBaseURL + "envelope.schema.json"); err != nil {
		return schemaSet{}, err
	}
	for _, t := range types {
		sch, n, err := compile(schemaBaseURL + t + ".schema.json")
		if err != nil {
			return schemaSet{}, err
		}
		set.byType[t], set.fastByType[t] = sch, n
	}
	return set, nil
}

// flattenSchema rewrites the schema at url into one self-contained
// document for compileNode: every $ref is replaced by the schema it points
// to and every allOf is merged into its parent.
//
// The rewrite is exact only for the keywords our files use, so it refuses
// anything else rather than guess: merging is conjunction (required is a
// union, properties merge member by member, false absorbs, true is the
// identity, other keywords must agree), which is what allOf means as long
// as additionalProperties is only ever true (a false or a schema there would
// depend on which properties its own branch lists).
func flattenSchema(docs map[string]any, url string) (any, error) {
	f := flattener{docs: docs}
	out, err := f.flatten(docs[url], url, 0)
	if err != nil {
		return nil, err
	}
	if m, ok := out.(map[string]any); ok {
		m["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	}
	return out, nil
}

type flattener struct {
	docs map[string]any // schema documents by $id
}

// maxFlattenDepth bounds $ref chains; our schemas nest four deep.
const maxFlattenDepth = 32

func (f *flattener) flatten(v any, base string, depth int) (any, error) {
	if depth > maxFlattenDepth {
		return nil, errors.New("$ref nesting too deep (a cycle?)")
	}
	s, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return v, nil
		}
		return nil, fmt.Errorf("a schema must be an object or a boolean, got %T", v)
	}
	out := make(map[string]any, len(s))
	var parts []any
	for _, k := range sortedKeys(s) {
		val := s[k]
		switch k {
		case "$schema", "$id", "$defs", "$comment", "title", "description":
			// Identification, definitions and annotations: not needed once
			// every reference is inlined.
		case "$ref":
			ref, _ := val.(string)
			target, targetBase, err := f.resolve(base, ref)
			if err != nil {
				return nil, err
			}
			ft, err := f.flatten(target, targetBase, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ref, err)
			}
			parts = append(parts, ft)
		case "allOf":
			members, _ := val.([]any)
			for _, m := range members {
				fm, err := f.flatten(m, base, depth+1)
				if err != nil {
					return nil, err
				}
				parts = append(parts, fm)
			}
		case "properties":
			props, _ := val.(map[string]any)
			fprops := make(map[string]any, len(props))
			for _, p := range sortedKeys(props) {
				fp, err := f.flatten(props[p], base, depth+1)
				if err != nil {
					return nil, fmt.Errorf("properties/%s: %w", p, err)
				}
				fprops[p] = fp
			}
			out[k] = fprops
		case "items":
			fi, err := f.flatten(val, base, depth+1)
			if err != nil {
				return nil, fmt.Errorf("items: %w", err)
			}
			out[k] = fi
		case "additionalProperties":
			if val != true {
				return nil, errors.New("additionalProperties other than true cannot be merged exactly")
			}
			out[k] = val
		case "type", "required", "pattern", "minLength", "maxLength", "minimum", "maximum", "enum", "const", "format":
			out[k] = val
		default:
			return nil, fmt.Errorf("keyword %q is not supported by the flattener; give it a merge rule in flattener.flatten and mergeSchemas", k)
		}
	}
	var merged any = out
	for _, p := range parts {
		var err error
		if merged, err = mergeSchemas(merged, p); err != nil {
			return nil, err
		}
	}
	return merged, nil
}

// resolve finds the schema ref points to, relative to base, among the
// embedded documents, and returns it with the base its own refs resolve
// against.
func (f *flattener) resolve(base, ref string) (any, string, error) {
	b, err := neturl.Parse(base)
	if err != nil {
		return nil, "", err
	}
	r, err := b.Parse(ref)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q: %w", ref, err)
	}
	frag := r.Fragment
	r.Fragment, r.RawFragment = "", ""
	docURL := r.String()
	v, ok := f.docs[docURL]
	if !ok {
		return nil, "", fmt.Errorf("$ref %q: no embedded schema %s", ref, docURL)
	}
	if frag == "" {
		return v, docURL, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, "", fmt.Errorf("$ref %q: only JSON pointer fragments are supported", ref)
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("$ref %q: %q is not an object", ref, tok)
		}
		if v, ok = m[tok]; !ok {
			return nil, "", fmt.Errorf("$ref %q: no %q", ref, tok)
		}
	}
	return v, docURL, nil
}

// mergeSchemas returns a schema equivalent to allOf [a, b] for flattened
// schemas a and b.
func mergeSchemas(a, b any) (any, error) {
	if a == false || b == false {
		return false, nil
	}
	if a == true {
		return b, nil
	}
	if b == true {
		return a, nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		return nil, fmt.Errorf("cannot merge %T and %T", a, b)
	}
	out := make(map[string]any, len(am)+len(bm))
	for k, v := range am {
		out[k] = v
	}
	for _, k := range sortedKeys(bm) {
		bv := bm[k]
		av, ok := out[k]
		if !ok {
			out[k] = bv
			continue
		}
		switch k {
		case "properties":
			ap, _ := av.(map[string]any)
			bp, _ := bv.(map[string]any)
			props := make(map[string]any, len(ap)+len(bp))
			for p, s := range ap {
				props[p] = s
			}
			for _, p := range sortedKeys(bp) {
				if s, ok := props[p]; ok {
					m, err := mergeSchemas(s, bp[p])
					if err != nil {
						return nil, fmt.Errorf("properties/%s: %w", p, err)
					}
					props[p] = m
				} else {
					props[p] = bp[p]
				}
			}
			out[k] = props
		case "required":
			ar, _ := av.([]any)
			br, _ := bv.([]any)
			req := append([]any(nil), ar...)
			for _, r := range br {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			out[k] = req
		case "items":
			m, err := mergeSchemas(av, bv)
			if err != nil {
				return nil, fmt.Errorf("items: %w", err)
			}
			out[k] = m
		default:
			if !reflect.DeepEqual(av, bv) {
				return nil, fmt.Errorf("conflicting values for %q", k)
			}
		}
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The patterns of envelope.schema.json, as the JSON parser yields them.
const (
	patternUUIDv4     = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"
	patternEventType  = "^[A-Z][A-Za-z0-9]*$"
	patternIdentifier = "^[^|\u0000-\u001f\u007f-\u009f]+$"
	patternKey        = "^[0-9a-f]{64}$"
)

// fastPatterns match exactly what regexp matches for these patterns (Go's
// regexp reads an invalid UTF-8 byte as U+FFFD, and so does ranging over a
// string), in a tenth of the time. A pattern not listed here, for example
// after an edit to a schema file, falls back to regexp: slower, never wrong.
// TestSchemaPatterns_MatchRegexp and FuzzSchemaPatterns check the
// equivalence.
var fastPatterns = map[string]func(string) bool{
	patternUUIDv4:     isUUIDv4,
	patternEventType:  isPascalCase,
	patternIdentifier: store.PrintableNoPipe,
	patternKey:        isLowerHex64,
}

type fastRegexp struct {
	src   string
	match func(string) bool
}

func (r fastRegexp) MatchString(s string) bool { return r.match(s) }
func (r fastRegexp) String() string            { return r.src }

// compilePattern is the schemas' regular expression engine.
func compilePattern(s string) (jsonschema.Regexp, error) {
	if m, ok := fastPatterns[s]; ok {
		return fastRegexp{src: s, match: m}, nil
	}
	return regexp.Compile(s)
}

func isUUIDv4(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	if s[14] != '4' || !strings.ContainsRune("89abAB", rune(s[19])) {
		return false
	}
	return isHexUUID(s)
}

func isPascalCase(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// errDateTime is returned for any date-time the format rejects; the caller
// builds the message, which names the field.
var errDateTime = errors.New("not an RFC 3339 date-time")

func validateDateTimeFormat(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil // format applies to strings only
	}
	if !isRFC3339(s) {
		return errDateTime
	}
	return nil
}

// isRFC3339 reports whether s is an RFC 3339 date-time (section 5.6) with
// an uppercase T and Z, seconds 00-59 and an offset within +-23:59. RFC 3339
// allows lowercase t/z and the leap second 60, but Go's time.Parse rejects
// them (and accepts things RFC 3339 does not, such as a comma before the
// fraction or an offset of +24:00), so a write is accepted only when both
// agree: every reader of the log can then parse emittedAt with
// time.RFC3339Nano.
func isRFC3339(s string) bool {
	// 2006-01-02T15:04:05[.frac](Z|+hh:mm|-hh:mm)
	if len(s) < len("2006-01-02T15:04:05Z") {
		return false
	}
	for i := 0; i < 19; i++ {
		c := s[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != 'T' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		default:
			if !isDigit(c) {
				return false
			}
		}
	}
	rest := s[19:]
	if strings.HasPrefix(rest, ".") {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
		isDigit(rest[1]) && isDigit(rest[2]) && isDigit(rest[4]) && isDigit(rest[5]):
		if rest[1] > '2' || (rest[1] == '2' && rest[2] > '3') || rest[4] > '5' {
			return false
		}
	default:
		return false
	}
	// Calendar and clock ranges (February 30, hour 24, second 60).
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// node is a flattened schema compiled for the accept path (see
// schemaSet). It implements exactly the keywords flattenSchema lets
// through, with the library's semantics: type (integer means a number with
// no fractional part, so 1.0 and 1e3 are integers), required, properties,
// items, pattern, minLength and maxLength (in characters), minimum and
// maximum (exact), enum and const of strings, format date-time, and the
// boolean schemas. A nil *node is the true schema.
type node struct {
	never bool // the false schema
	// keep names the members an object schema looks at: properties and
	// required (see payloadValue).
	keep      map[string]struct{}
	types     typeSet
	required  []string
	props     []propNode // sorted by name
	items     *node
	pattern   jsonschema.Regexp
	minLength int // -1: none
	maxLength int // -1: none
	minimum   *bound
	maximum   *bound
	enum      []string
	hasEnum   bool
	constStr  *string
	dateTime  bool
	// numeric is set when the library will parse a number here with
	// big.Rat (integer type, minimum, maximum), so check must first make
	// sure it is of a size big.Rat handles (see numberInRange).
	numeric bool
}

// child returns the schema of member name, nil (the true schema) when
// there is none.
func (n *node) child(name string) *node {
	if n == nil {
		return nil
	}
	for _, p := range n.props {
		if p.name == name {
			return p.node
		}
	}
	return nil
}

type propNode struct {
	name string
	node *node
}

type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var typeNames = map[string]typeSet{
	"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString,
}

// bound is a minimum or maximum, kept as an int64 too when it is one.
type bound struct {
	rat   *big.Rat
	i     int64
	isInt bool
}

func compileNode(v any) (*node, error) {
	switch s := v.(type) {
	case bool:
		if s {
			return nil, nil
		}
		return &node{never: true}, nil
	case map[string]any:
		n := &node{minLength: -1, maxLength: -1}
		for _, k := range sortedKeys(s) {
			if err := n.compileKeyword(k, s[k]); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
		n.numeric = n.types&typeInteger != 0 || n.minimum != nil || n.maximum != nil
		n.keep = make(map[string]struct{}, len(n.props)+len(n.required))
		for _, p := range n.props {
			n.keep[p.name] = struct{}{}
		}
		for _, r := range n.required {
			n.keep[r] = struct{}{}
		}
		return n, nil
	}
	return nil, fmt.Errorf("a schema must be an object or a boolean, got %T", v)
}

func (n *node) compileKeyword(k string, val any) error {
	var err error
	switch k {
	case "$schema":
	case "type":
		names, ok := val.([]any)
		if !ok {
			names = []any{val}
		}
		for _, name := range names {
			str, _ := name.(string)
			t, ok := typeNames[str]
			if !ok {
				return fmt.Errorf("unknown type %v", name)
			}
			n.types |= t
		}
	case "required":
		for _, r := range val.([]any) {
			str, ok := r.(string)
			if !ok {
				return fmt.Errorf("not a string: %v", r)
			}
			n.required = append(n.required, str)
		}
	case "properties":
		props, _ := val.(map[string]any)
		for _, name := range sortedKeys(props) {
			child, err := compileNode(props[name])
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if child != nil {
				n.props = append(n.props, propNode{name: name, node: child})
			}
		}
	case "items":
		n.items, err = compileNode(val)
	case "additionalProperties":
		if val != true {
			return errors.New("only true is supported")
		}
	case "pattern":
		str, _ := val.(string)
		n.pattern, err = compilePattern(str)
	case "minLength", "maxLength":
		num, _ := val.(json.Number)
		i, perr := strconv.Atoi(string(num))
		if perr != nil || i < 0 {
			return fmt.Errorf("not a non-negative integer: %v", val)
		}
		if k == "minLength" {
			n.minLength = i
		} else {
			n.maxLength = i
		}
	case "minimum", "maximum":
		num, _ := val.(json.Number)
		r, ok := new(big.Rat).SetString(string(num))
		if !ok {
			return fmt.Errorf("not a number: %v", val)
		}
		b := &bound{rat: r}
		if r.IsInt() && r.Num().IsInt64() {
			b.i, b.isInt = r.Num().Int64(), true
		}
		if k == "minimum" {
			n.minimum = b
		} else {
			n.maximum = b
		}
	case "enum":
		n.hasEnum = true
		for _, e := range val.([]any) {
			str, ok := e.(string)
			if !ok {
				return fmt.Errorf("only string values are supported, got %v", e)
			}
			n.enum = append(n.enum, str)
		}
	case "const":
		str, ok := val.(string)
		if !ok {
			return fmt.Errorf("only a string is supported, got %v", val)
		}
		n.constStr = &str
	case "format":
		if val != "date-time" {
			return fmt.Errorf("format %v is not supported", val)
		}
		n.dateTime = true
	default:
		return errors.New("keyword not supported by the accept path; add it to compileNode and node.check")
	}
	return err
}

// checkState collects what node.check finds.
type checkState struct {
	path    []pathElem // location being checked
	invalid bool
	// rangeLoc is the location of the first number too large to hand to
	// the library (nil: none).
	rangeLoc []string
}

// pathElem is a member name or, when index >= 0, an array index; kept
// unconverted so a successful check does not allocate.
type pathElem struct {
	name  string
	index int
}

func (st *checkState) location() []string {
	loc := make([]string, len(st.path))
	for i, e := range st.path {
		if e.index >= 0 {
			loc[i] = strconv.Itoa(e.index)
		} else {
			loc[i] = e.name
		}
	}
	return loc
}

// check evaluates v. It does not stop at the first failure: every number
// the library would parse must be found and size-checked before the
// library sees the document.
func (n *node) check(v any, st *checkState) {
	if n == nil {
		return
	}
	if n.never {
		st.invalid = true
		return
	}
	if n.numeric {
		if num, ok := v.(json.Number); ok && !numberInRange(num) {
			st.invalid = true
			if st.rangeLoc == nil {
				st.rangeLoc = st.location()
			}
			return
		}
	}
	if n.types != 0 && !n.types.allows(v) {
		st.invalid = true
	}
	switch x := v.(type) {
	case string:
		n.checkString(x, st)
	case json.Number, int64:
		if (n.minimum != nil && n.minimum.cmp(x) < 0) || (n.maximum != nil && n.maximum.cmp(x) > 0) {
			st.invalid = true
		}
	case map[string]any:
		for _, r := range n.required {
			if _, ok := x[r]; !ok {
				st.invalid = true
			}
		}
		for _, p := range n.props {
			if pv, ok := x[p.name]; ok {
				st.path = append(st.path, pathElem{name: p.name, index: -1})
				p.node.check(pv, st)
				st.path = st.path[:len(st.path)-1]
			}
		}
	case []any:
		if n.items != nil {
			for i, e := range x {
				st.path = append(st.path, pathElem{index: i})
				n.items.check(e, st)
				st.path = st.path[:len(st.path)-1]
			}
		}
	}
	if _, isString := v.(string); !isString && (n.hasEnum || n.constStr != nil) {
		st.invalid = true // enum and const hold strings only
	}
}

func (n *node) checkString(s string, st *checkState) {
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s)
		if (n.minLength >= 0 && l < n.minLength) || (n.maxLength >= 0 && l > n.maxLength) {
			st.invalid = true
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		st.invalid = true
	}
	if n.hasEnum && !slices.Contains(n.enum, s) {
		st.invalid = true
	}
	if n.constStr != nil && s != *n.constStr {
		st.invalid = true
	}
	if n.dateTime && !isRFC3339(s) {
		st.invalid = true
	}
}

func (t typeSet) allows(v any) bool {
	switch x := v.(type) {
	case nil:
		return t&typeNull != 0
	case bool:
		return t&typeBoolean != 0
	case string:
		return t&typeString != 0
	case map[string]any:
		return t&typeObject != 0
	case []any:
		return t&typeArray != 0
	case int64:
		return t&(typeNumber|typeInteger) != 0
	case json.Number:
		if t&typeNumber != 0 {
			return true
		}
		return t&typeInteger != 0 && isIntegral(x)
	}
	return false
}

// isIntegral reports whether a JSON number has no fractional part (1, 1.0,
// 1e3), as the library decides it.
func isIntegral(n json.Number) bool {
	if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return true
	}
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

// cmp compares a number (int64 or json.Number) with the bound.
func (b *bound) cmp(v any) int {
	switch x := v.(type) {
	case int64:
		if b.isInt {
			return cmpInt64(x, b.i)
		}
		return new(big.Rat).SetInt64(x).Cmp(b.rat)
	case json.Number:
		if b.isInt {
			if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return cmpInt64(i, b.i)
			}
		}
		if r, ok := new(big.Rat).SetString(string(x)); ok {
			return r.Cmp(b.rat)
		}
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

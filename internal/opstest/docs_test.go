package opstest_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocs_LinksStayInside reads every Markdown file of the checkout
// (README.md, docs/, and any other) and checks that each relative link
// names a file or directory inside the repository that exists, and that
// its #fragment, when it has one and points into a Markdown file, is a
// heading there. A clone is all a reader has: a link that leaves the
// repository, or a file that was renamed, leads nowhere.
func TestDocs_LinksStayInside(t *testing.T) {
	root := moduleRoot(t)
	docs := markdownFiles(t, root)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(data))
		anchors[path] = a
		return a
	}
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, l := range markdownLinks(string(data)) {
			if external(l.target) {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := doc
			if path != "" {
				if strings.HasPrefix(path, "/") {
					target = filepath.Join(root, path)
				} else {
					target = filepath.Join(filepath.Dir(doc), path)
				}
				if r, err := filepath.Rel(root, target); err != nil || r == ".." || strings.HasPrefix(r, "../") {
					t.Errorf("%s:%d: link %q leaves the repository: state what the reader needs here, or link a file of the repository", rel, l.line, l.target)
					continue
				}
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link %q names %s, which does not exist", rel, l.line, l.target, relTo(root, target))
					continue
				}
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[strings.ToLower(frag)] {
				t.Errorf("%s:%d: link %q: %s has no heading whose anchor is #%s", rel, l.line, l.target, relTo(root, target), frag)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no relative link found in %d Markdown files: is the link parser broken?", len(docs))
	}
}

// TestDocs_NoOutsideReading checks that no Markdown file of the checkout
// sends the reader to a document outside it: the project's design notes
// and contract copies beside the checkout are not part of a clone.
// docs/CONTRACT.md states the contract in the repository's own words.
func TestDocs_NoOutsideReading(t *testing.T) {
	root := moduleRoot(t)
	outside := outsideNames
	for _, doc := range markdownFiles(t, root) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for i, line := range strings.Split(string(data), "\n") {
			for _, o := range outside {
				if strings.Contains(line, o) {
					t.Errorf("%s:%d mentions %s, which is not in the repository: say what it says here, or point at docs/CONTRACT.md or another document of the repository", rel, i+1, o)
				}
			}
		}
	}
}

// outsideNames are what sends a reader outside the repository: the folder
// beside the checkout that holds the project's design notes and the peer's
// data, and the design notes themselves. Each is spelled in two parts so
// that this file, which looks for them, does not hold them.
var outsideNames = []string{".." + "/shared", "DESIGN" + ".md"}

// peerPath is the one legitimate mention of the folder beside the
// checkout: the default of RUNSTREAM_PEER_DIR, where the peer schema check
// reads the peer implementation's JSON Schemas at run time. It is an
// input of the tests, not a reference for readers.
const peerPath = ".." + "/shared/peer"

// peerPathReaders are the files that read peerPath at run time (or state
// its default beside the code that does), and so may name it: the test
// script's peer-schema line, the CI entry point that sets
// RUNSTREAM_PEER_DIR, and testenv.PeerDir.
var peerPathReaders = map[string]bool{
	"scripts/test.sh":          true,
	".ci/run":                  true,
	"internal/testenv/peer.go": true,
}

// TestSources_NoOutsideReading is TestDocs_NoOutsideReading for
// everything else a reader of the repository reads: Go files (comments and
// strings alike), shell scripts, JavaScript and TypeScript sources, YAML,
// JSON, SQL and Makefiles. Installed dependencies, build output (dist) and
// test output are not the repository's and are left out. The files of
// peerPathReaders may name peerPath, and only it.
func TestSources_NoOutsideReading(t *testing.T) {
	root := moduleRoot(t)
	files := sourceFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("only %d source files under %s: is the walk broken?", len(files), root)
	}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		rel = filepath.ToSlash(rel)
		for i, line := range strings.Split(string(data), "\n") {
			if peerPathReaders[rel] && strings.Contains(line, peerPath) {
				seen[rel] = true
				line = strings.ReplaceAll(line, peerPath, "")
			}
			for _, o := range outsideNames {
				if strings.Contains(line, o) {
					t.Errorf("%s:%d mentions %s, which is not in the repository: say the decision here in a few words, or point at a document of the repository (docs/ARCHITECTURE.md, docs/CONTRACT.md, docs/INTERFACES.md, ...)", rel, i+1, o)
				}
			}
		}
	}
	for rel := range peerPathReaders {
		if !seen[rel] {
			t.Errorf("%s no longer reads %s: remove it from peerPathReaders", rel, peerPath)
		}
	}
}

// sourceFiles lists the checkout's files other than Markdown that a reader
// reads, by name (see TestSources_NoOutsideReading) or, for scripts
// without an extension, by their #! line.
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	exts := []string{".go", ".sh", ".js", ".mjs", ".cjs", ".ts", ".yml", ".yaml", ".json", ".sql"}
	return walkRepo(t, root, []string{".git", "node_modules", "test-artifacts", "dist", "bin", ".runstream", "bench/results"},
		func(path string, d fs.DirEntry) bool {
			if !d.Type().IsRegular() {
				return false
			}
			name := d.Name()
			for _, e := range exts {
				if strings.HasSuffix(name, e) {
					return true
				}
			}
			return name == "Makefile" || (!strings.Contains(name, ".") && hasShebang(path))
		})
}

// walkRepo lists the files under root that keep accepts, skipping every
// directory named in skip (by its name, or, for an entry holding a slash,
// by its slash-separated path from root).
func walkRepo(t *testing.T, root string, skip []string, keep func(path string, d fs.DirEntry) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			for _, sk := range skip {
				if d.Name() == sk || filepath.ToSlash(rel) == sk {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if keep(path, d) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hasShebang reports whether the file at path starts with "#!".
func hasShebang(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 2)
	n, _ := f.Read(b)
	return n == 2 && string(b) == "#!"
}

// TestDocs_Parser checks the link and anchor parsing on a sample.
func TestDocs_Parser(t *testing.T) {
	md := "# Title\n\n## The relay: outbox to Kafka\n\nSee [a](docs/A.md#x), ![i](img.png \"t\") and\n" +
		"[ref]: ../elsewhere.md\n\n```\n[not](a-link.md)\n```\n\n`[nor](this.md)` <a href=\"b/c.md\">c</a>\n" +
		"## Title\n"
	var got []string
	for _, l := range markdownLinks(md) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"5:docs/A.md#x", "5:img.png", "6:../elsewhere.md", "12:b/c.md"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("links %v, want %v", got, want)
	}
	a := headingAnchors(md)
	for _, w := range []string{"title", "the-relay-outbox-to-kafka", "title-1"} {
		if !a[w] {
			t.Errorf("no anchor %q in %v", w, a)
		}
	}
}

func relTo(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}

// markdownFiles lists the checkout's Markdown files, leaving out what is
// not the repository's own (installed dependencies, test output, git).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	out := walkRepo(t, root, []string{".git", "node_modules", "test-artifacts", "dist"},
		func(_ string, d fs.DirEntry) bool { return strings.HasSuffix(d.Name(), ".md") })
	if len(out) == 0 {
		t.Fatalf("no Markdown file under %s", root)
	}
	return out
}

type mdLink struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	htmlLink   = regexp.MustCompile(`(?:href|src)="([^"]+)"`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
)

// markdownLinks returns the link targets of a Markdown text, outside code
// blocks and code spans: inline links and images, reference definitions,
// and href/src attributes of inline HTML.
func markdownLinks(md string) []mdLink {
	var out []mdLink
	fence := ""
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inlineLink, refLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, mdLink{line: i + 1, target: m[1]})
			}
		}
	}
	return out
}

// external reports whether a link target is not a path of the repository:
// a URL with a scheme, or a mail address.
func external(target string) bool {
	return strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:")
}

// headingAnchors returns the anchors GitHub gives a Markdown text's
// headings: lowercased, punctuation dropped, spaces made hyphens, and a
// repeated anchor numbered -1, -2, ...
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if out[a] {
			for n := 1; ; n++ {
				if numbered := fmt.Sprintf("%s-%d", a, n); !out[numbered] {
					a = numbered
					break
				}
			}
		}
		out[a] = true
	}
	return out
}

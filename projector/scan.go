package projector

import (
	"unicode/utf8"
)

// snapDecoder reads JSON the projector wrote (snapshots) in one pass;
// see fastSnapshot.
type snapDecoder struct {
	b []byte
	i int
}

func (d *snapDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *snapDecoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace follows.
func (d *snapDecoder) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// plainString reads a string without escapes or control characters that
// is valid UTF-8, and returns its contents (a slice of the input).
func (d *snapDecoder) plainString() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start, ascii := d.i, true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return nil, false
}

// int reads an integer without fraction or exponent that fits an int64.
func (d *snapDecoder) int(dst *int64) bool {
	neg := d.eat('-')
	start := d.i
	var n uint64
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		if d.i-start >= 18 { // 18 digits always fit; leave longer ones
			return false
		}
		n = n*10 + uint64(d.b[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	if digits == 0 || (digits > 1 && d.b[start] == '0') {
		return false
	}
	if d.i < len(d.b) {
		if c := d.b[d.i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	*dst = int64(n)
	if neg {
		*dst = -*dst
	}
	return true
}

func (d *snapDecoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

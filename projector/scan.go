package projector

import "github.com/runstream/runstream/internal/jsonscan"

// snapDecoder reads JSON the projector wrote (snapshots) in one pass;
// see fastSnapshot.
type snapDecoder struct {
	jsonscan.Scanner
}

// int reads an integer without fraction or exponent that fits an int64.
func (d *snapDecoder) int(dst *int64) bool {
	neg := d.Eat('-')
	start := d.I
	var n uint64
	for d.I < len(d.B) && d.B[d.I] >= '0' && d.B[d.I] <= '9' {
		if d.I-start >= 18 { // 18 digits always fit; leave longer ones
			return false
		}
		n = n*10 + uint64(d.B[d.I]-'0')
		d.I++
	}
	digits := d.I - start
	if digits == 0 || (digits > 1 && d.B[start] == '0') {
		return false
	}
	if d.I < len(d.B) {
		if c := d.B[d.I]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	*dst = int64(n)
	if neg {
		*dst = -*dst
	}
	return true
}

package httpapi

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// parseSSE reads frames the way EventSource does (lines end at CR, LF or
// CRLF; a blank line dispatches), returning each event's name, id and
// data.
func parseSSE(b []byte) [][3]string {
	var out [][3]string
	var ev, id string
	var data []string
	norm := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\r", "\n")
	sc := bufio.NewScanner(strings.NewReader(norm))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				out = append(out, [3]string{ev, id, strings.Join(data, "\n")})
			}
			ev, id, data = "", "", nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev = value
		case "id":
			id = value
		case "data":
			data = append(data, value)
		}
	}
	return out
}

// TestSSEFrame_NoRawLineBreaks: whatever the event name, id or data hold,
// a frame is exactly one event, and its data arrives as sent.
func TestSSEFrame_NoRawLineBreaks(t *testing.T) {
	for _, tc := range []struct {
		event, id, data string
		wantEvent       string
		wantID          string
	}{
		{"snapshot", "7", `{"a":1}`, "snapshot", "7"},
		{"update\n\nevent: forged", "1\r\ndata: x", `{"a":1}`, "updateevent: forged", "1data: x"},
		{"update", "", "{\"a\":\n\"b\"}\n\nevent: forged\ndata: {}", "update", ""},
		{"update", "", "line1\r\nline2\rline3\n", "update", ""},
	} {
		frame := sseFrame(tc.event, tc.id, []byte(tc.data))
		if !bytes.HasSuffix(frame, []byte("\n\n")) || bytes.Count(frame, []byte("\n\n")) != 1 || bytes.IndexByte(frame, '\r') >= 0 {
			t.Errorf("frame %q: want one blank line, at its end, and no CR", frame)
		}
		got := parseSSE(frame)
		wantData := strings.ReplaceAll(strings.ReplaceAll(tc.data, "\r\n", "\n"), "\r", "\n")
		if len(got) != 1 || got[0] != [3]string{tc.wantEvent, tc.wantID, wantData} {
			t.Errorf("frame %q reads as %q, want one event %q id %q data %q", frame, got, tc.wantEvent, tc.wantID, wantData)
		}
	}
}

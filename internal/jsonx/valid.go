package jsonx

// The functions here cut a document that json.Valid has already accepted
// (store/validate checks a request body once, then cuts it up): they do not
// check it again, have no depth limit (they count brackets rather than
// recurse), and on invalid input return some position within it.

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i].
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// ValueEnd returns the index just past the value starting at data[i].
func ValueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// EachMember calls fn with the quoted name and the raw value of every
// member of the object that starts data.
func EachMember(data []byte, fn func(key, raw []byte)) {
	i := SkipSpace(data, 1)
	if data[i] == '}' {
		return
	}
	for {
		end := stringEnd(data, i)
		key := data[i:end]
		i = SkipSpace(data, end)
		i = SkipSpace(data, i+1) // the colon
		end = ValueEnd(data, i)
		fn(key, data[i:end:end])
		i = SkipSpace(data, end)
		if data[i] == '}' {
			return
		}
		i = SkipSpace(data, i+1) // the comma
	}
}

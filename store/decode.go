package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// openShape holds the exact JSON of a field the store keeps as it was
// sent, without inspecting it: an other step's raw and an edit's
// structured_patch.
type openShape jsontext.Value

// openFields are the names whose values decodeTree keeps as openShape.
var openFields = map[string]bool{"raw": true, "structured_patch": true}

// decodeTree decodes one JSON value in a single pass into maps, slices,
// strings, booleans, nil, json.Number (the number's own text) and
// openShape. Invalid UTF-8 becomes U+FFFD and a repeated name keeps its
// last value, as encoding/json does; anything after the value is an error.
func decodeTree(body []byte) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	v, err := readTree(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func readTree(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String()
			if openFields[key] {
				val, err := dec.ReadValue()
				if err != nil {
					return nil, err
				}
				if val.Kind() == 'n' {
					m[key] = nil
				} else {
					// Compacted and escaped as encoding/json writes it, so the
					// value reads back byte for byte as it is stored.
					b, err := json.Marshal(json.RawMessage(val))
					if err != nil {
						return nil, err
					}
					m[key] = openShape(b)
				}
				continue
			}
			if m[key], err = readTree(dec); err != nil {
				return nil, err
			}
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for dec.PeekKind() != ']' {
			v, err := readTree(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken()
		return a, err
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, errors.New("unexpected JSON token")
}

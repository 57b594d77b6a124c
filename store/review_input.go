package store

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of what a reviewer writes, in characters.
const (
	MaxStateChars = 64     // a verdict's state
	MaxNameChars  = 100    // a reviewer's or a note author's name
	MaxNoteChars  = 10_000 // a verdict's note, a step's note
	MaxNotes      = 1000   // notes on the steps of one session
)

// parseReviewBody decodes a verdict or note body, an object of the fields
// fs each read by read, with the batch's decoding rules, so its problems
// read like a batch's: ErrNotJSON, ErrNotObject, or an *InvalidError
// naming subject.
func parseReviewBody(body []byte, subject string, fs fields, read func(d *decoder, name string)) error {
	found := &jsonProblems{}
	d := newDecoder(bytes.NewBuffer(body), body, found)
	if err := d.whole(func() { d.object(fs, func(name string) { read(d, name) }) }); err != nil {
		return err
	}
	if ps := found.rest(); len(ps) > 0 {
		return &InvalidError{Subject: subject, Problems: ps}
	}
	return nil
}

// reviewProblems collects the problems of what a reviewer wrote.
type reviewProblems []Problem

func (p *reviewProblems) add(path, msg string) { *p = append(*p, Problem{Path: path, Message: msg}) }

// reviewText checks one field a reviewer wrote: at most max characters,
// and on one line without control characters when oneLine.
func reviewText(c *reviewProblems, path, s string, max int, oneLine bool) {
	if n := utf8.RuneCountInString(s); n > max {
		c.add(path, fmt.Sprintf("longer than %d characters: %d", max, n))
		return
	}
	if !utf8.ValidString(s) {
		c.add(path, "must be valid UTF-8")
		return
	}
	if oneLine && strings.ContainsFunc(s, unicode.IsControl) {
		c.add(path, "must be one line without control characters")
	}
}

// checkAll runs checks on a typed value inside a write, so no caller can
// skip them; it returns an *InvalidError naming subject, or nil.
func checkAll(subject string, checks func(c *reviewProblems)) error {
	var c reviewProblems
	checks(&c)
	if len(c) > 0 {
		return &InvalidError{Subject: subject, Problems: c}
	}
	return nil
}

// CheckUser checks the name of a team server's user, which becomes the
// owner_id of the sessions they push: as a reviewer's name, at most
// MaxNameChars characters on one line, and not empty or padded with
// spaces. It returns an *InvalidError naming "user".
func CheckUser(name string) error {
	return checkAll("user", func(c *reviewProblems) {
		if strings.TrimSpace(name) != name || name == "" {
			c.add("user", "must be a name without surrounding spaces")
		}
		reviewText(c, "user", name, MaxNameChars, true)
	})
}

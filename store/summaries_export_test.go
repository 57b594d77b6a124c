package store

// RememberedListJSON is the list item encoding List remembers for session
// id (nil if none) and the bytes its summaries count against their bound.
func (s *Store) RememberedListJSON(id string) (encoding []byte, bytes int) {
	encoding = s.summaries.encoding(id)
	s.summaries.mu.Lock()
	defer s.summaries.mu.Unlock()
	return encoding, s.summaries.bytes
}

package store

// Remembered reports how many sessions the store keeps whole-session
// results of in memory, their bytes, and whether anything of id is
// remembered (there or in List's summaries).
func (s *Store) Remembered(id string) (sessions, bytes int, held bool) {
	s.whole.mu.Lock()
	sessions, bytes = len(s.whole.byPK), s.whole.bytes
	s.whole.mu.Unlock()
	return sessions, bytes, s.whole.held(id) || s.summaries.held(id)
}

// RememberedLimits are the bounds of that memory.
const RememberedSessions, RememberedBytes = rememberedSessions, rememberedBytes

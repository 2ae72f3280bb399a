package ai

import "sync"

// syncMap is a map safe for concurrent use, read far more often than written, that stops
// growing at max entries (0: no bound). Its zero value is empty and unbounded. Reads take a
// read lock and allocate nothing for comparable keys such as modelKey or a string.
type syncMap[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func (s *syncMap[K, V]) get(k K) (V, bool) {
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	return v, ok
}

// add stores v under k unless k is there already or the map is full, and reports whether it
// stored it.
func (s *syncMap[K, V]) add(k K, v V) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.m[k]; known || s.max > 0 && len(s.m) >= s.max {
		return false
	}
	if s.m == nil {
		s.m = make(map[K]V)
	}
	s.m[k] = v
	return true
}

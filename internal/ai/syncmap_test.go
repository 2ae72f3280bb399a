package ai

import "testing"

// Ensure a syncMap keeps the first value of a key and stops growing at its bound; the zero
// value has none.
func TestSyncMap(t *testing.T) {
	t.Parallel()
	var m syncMap[modelKey, int]
	m.max = 2
	if !m.add(modelKey{"p", "a"}, 1) || m.add(modelKey{"p", "a"}, 9) || !m.add(modelKey{"p", "b"}, 2) {
		t.Fatal("first adds of a and b should store, a second add of a should not")
	}
	if m.add(modelKey{"p", "c"}, 3) {
		t.Error("stored past the bound")
	}
	for k, want := range map[string]int{"a": 1, "b": 2} {
		if v, ok := m.get(modelKey{"p", k}); !ok || v != want {
			t.Errorf("get(%s) = %d, %v; want %d", k, v, ok, want)
		}
	}
	if _, ok := m.get(modelKey{"p", "c"}); ok {
		t.Error("c is there")
	}
	var unbounded syncMap[string, bool]
	for i := range 10_000 {
		if !unbounded.add(string(rune('a'+i%26))+string(rune(i)), true) {
			t.Fatalf("zero value refused entry %d", i)
		}
	}
}

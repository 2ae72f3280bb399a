package templates

import (
	"fmt"
	"testing"
	"time"
)

// Ensure a list read before a write cannot be kept after it.
func TestListCache_WriteDuringRead(t *testing.T) {
	t.Parallel()
	c := newListCache(time.Hour, time.Now)
	_, gen, ok := c.get("")
	if ok {
		t.Fatal("hit on an empty cache")
	}
	c.drop() // a write lands while the read is under way
	c.put("", gen, []Template{{ID: "stale"}})
	if ts, _, ok := c.get(""); ok {
		t.Fatalf("kept a list read before a write: %v", ts)
	}
	_, gen, _ = c.get("")
	c.put("", gen, []Template{{ID: "fresh"}})
	if ts, _, ok := c.get(""); !ok || ts[0].ID != "fresh" {
		t.Fatalf("get = %v, %v; want the fresh list", ts, ok)
	}
}

// Ensure the number of lists and of templates held stay within their bounds.
func TestListCache_Bounds(t *testing.T) {
	t.Parallel()
	c := newListCache(time.Hour, time.Now)
	for i := range 3 * maxCachedLists {
		_, gen, _ := c.get(fmt.Sprint(i))
		c.put(fmt.Sprint(i), gen, make([]Template, 10))
		if len(c.entries) > maxCachedLists || c.held > maxCachedTemplates {
			t.Fatalf("after %d lists: %d lists, %d templates held", i+1, len(c.entries), c.held)
		}
	}
	_, gen, _ := c.get("big")
	c.put("big", gen, make([]Template, maxCachedTemplates+1))
	if _, _, ok := c.get("big"); ok {
		t.Fatal("kept a list over maxCachedTemplates")
	}
	_, gen, _ = c.get("half")
	c.put("half", gen, make([]Template, maxCachedTemplates/2+1))
	_, gen, _ = c.get("other half")
	c.put("other half", gen, make([]Template, maxCachedTemplates/2+1))
	if c.held > maxCachedTemplates {
		t.Fatalf("%d templates held, over %d", c.held, maxCachedTemplates)
	}
	if _, _, ok := c.get("other half"); !ok {
		t.Fatal("the newest list was not kept")
	}
	if newListCache(0, time.Now) != nil {
		t.Fatal("a zero TTL made a cache")
	}
}

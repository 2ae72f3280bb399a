package templates

import (
	"crypto/sha256"
	"io"
	"sort"

	"go.mongodb.org/mongo-driver/bson"
)

// digest identifies a template's content: the SHA-256 of its canonical encoding
// (writeCanonical). Two documents have the same digest exactly when they hold the same content,
// whatever their fields' order; a collision would take breaking SHA-256.
type digest [sha256.Size]byte

// contentFields are a template's user-visible content, what Cleanup compares between a space's
// copy and core's: not _id, id or the timestamps.
var contentFields = [...]string{"name", "widgetType", "description", "properties"}

// contentProjection is a projection of the fields named and contentFields: what contentDigest
// reads, and the keys to tell whose content it is.
func contentProjection(keys ...string) bson.D {
	p := make(bson.D, 0, len(keys)+len(contentFields))
	for _, f := range append(keys, contentFields[:]...) {
		p = append(p, bson.E{Key: f, Value: 1})
	}
	return p
}

// contentDigest returns the digest of doc's user-visible content (contentFields, each absent or
// its value, in that order).
func contentDigest(doc bson.Raw) digest {
	h := sha256.New()
	for _, f := range contentFields {
		v, err := doc.LookupErr(f)
		if err != nil {
			_, _ = h.Write([]byte{0})
			continue
		}
		_, _ = h.Write([]byte{1})
		writeCanonical(h, v)
	}
	var d digest
	h.Sum(d[:0])
	return d
}

// documentDigest returns the digest of every field of doc but _id (the space document's
// content as Migrate compares versions of one identifier).
func documentDigest(doc bson.Raw) digest {
	h := sha256.New()
	writeCanonicalDocument(h, doc, true)
	var d digest
	h.Sum(d[:0])
	return d
}

// writeCanonical writes v to w so that two values are written alike exactly when they hold the
// same content: documents with their fields in key order, arrays in order, any other value as
// its BSON type and stored bytes (so 1 as an int32 and 1.0 as a double differ). Every value
// starts with its type; every field and array element with 1, and a document or array ends with
// 0, so that no two different values are written alike.
func writeCanonical(w io.Writer, v bson.RawValue) {
	_, _ = w.Write([]byte{byte(v.Type)})
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		writeCanonicalDocument(w, v.Document(), false)
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		for _, e := range vals {
			_, _ = w.Write([]byte{1})
			writeCanonical(w, e)
		}
		_, _ = w.Write([]byte{0})
	default:
		_, _ = w.Write(v.Value)
	}
}

// writeCanonicalDocument writes doc's fields (but _id when skipID is set) to w in key order,
// each value with writeCanonical.
func writeCanonicalDocument(w io.Writer, doc bson.Raw, skipID bool) {
	elems, _ := doc.Elements()
	sort.SliceStable(elems, func(i, j int) bool { return elems[i].Key() < elems[j].Key() })
	for _, e := range elems {
		if skipID && e.Key() == "_id" {
			continue
		}
		_, _ = w.Write([]byte{1})
		_, _ = w.Write(append([]byte(e.Key()), 0))
		writeCanonical(w, e.Value())
	}
	_, _ = w.Write([]byte{0})
}

package dbcheck

import (
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/apperr"
)

// SecretField is a top-level field that the API never answers and that no filter may name:
// Field of the collection Collection in every database named Database (names compared without
// regard to case, as MongoDB refuses two databases that differ only in case).
type SecretField struct{ Database, Collection, Field string }

// secretsOf returns the secret fields of database.collection.
func (s *Service) secretsOf(database, collection string) []string {
	var fields []string
	for _, f := range s.opts.Secret {
		if strings.EqualFold(f.Database, database) && strings.EqualFold(f.Collection, collection) {
			fields = append(fields, f.Field)
		}
	}
	return fields
}

// guessOperators compare a document's fields with each other or with a schema: on a collection
// with a secret field they could test its value without naming it as a key.
var guessOperators = []string{"$expr", "$jsonSchema"}

// checkSecretFilter refuses (Forbidden) a filter that names one of secrets at any depth, or
// uses an operator that could test one without naming it: a filter is an oracle, and a
// count of matches for {"password": {"$regex": "^\\$2b\\$10\\$a"}} reveals a hash a character
// at a time as surely as an answer that shows it.
func checkSecretFilter(filter bson.Raw, collection string, secrets []string) error {
	if len(secrets) == 0 {
		return nil
	}
	key := secretKey(filter, secrets)
	if key == "" {
		return nil
	}
	if slices.Contains(guessOperators, key) {
		return apperr.E(apperr.Forbidden, fmt.Sprintf("filter must not use %s on %s: it holds secret fields (%s)",
			key, collection, strings.Join(secrets, ", ")))
	}
	return apperr.E(apperr.Forbidden, fmt.Sprintf("filter must not name %s: it is a secret field of %s", key, collection))
}

// secretKey returns the first key of doc, at any depth, that is a secret, a path into one
// ("password.x") or a guessOperator; "" when there is none.
func secretKey(doc bson.Raw, secrets []string) string {
	elems, _ := doc.Elements() // parseFilter built doc: it is well formed
	for _, e := range elems {
		k := e.Key()
		if slices.Contains(guessOperators, k) {
			return k
		}
		for _, f := range secrets {
			if k == f || strings.HasPrefix(k, f+".") {
				return k
			}
		}
		if found := secretValueKey(e.Value(), secrets); found != "" {
			return found
		}
	}
	return ""
}

func secretValueKey(v bson.RawValue, secrets []string) string {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		return secretKey(v.Document(), secrets)
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		for _, x := range vals {
			if found := secretValueKey(x, secrets); found != "" {
				return found
			}
		}
	}
	return ""
}

package ai

import "github.com/hashicorp/golang-lru/v2/expirable"

// modelCache holds a value for each of the maxModels models last used, safe for concurrent
// use. It is a least-recently-used cache, so that model names clients make up are evicted by
// the models in use, never the other way round.
type modelCache[V any] = expirable.LRU[modelKey, V]

// maxModels bounds a modelCache.
const maxModels = 4096

// newModelCache returns an empty modelCache whose entries do not expire.
func newModelCache[V any]() *modelCache[V] { return expirable.NewLRU[modelKey, V](maxModels, nil, 0) }

package httpapi

import (
	"context"

	"github.com/acme/app/internal/keys"
)

// KeyAuthenticator resolves a personal API key to its owner.
type KeyAuthenticator interface {
	Authenticate(ctx context.Context, key string) (keys.Owner, error)
}

package auth

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Caller is the authenticated user a request acts for, as carried by its access token.
type Caller struct {
	ID    string   // user id (hex ObjectId)
	Email string   //
	Roles []string //
}

// HasRole reports whether the caller holds role.
func (c Caller) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

// ErrInvalidToken is returned by Verify for any token that must not be accepted.
var ErrInvalidToken = errors.New("auth: invalid token")

// claims is the token payload: sub, email, roles, iat, exp.
type claims struct {
	Email string   `json:"email"`
	Roles []string `json:"roles"`
	jwt.RegisteredClaims
}

// Tokens issues and verifies HS256 access tokens.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
	parser *jwt.Parser

	// verified remembers the maxVerified tokens last used that passed a full check, by their
	// exact text, so that a client's repeated requests skip the parse and MAC; expiry is
	// still checked every time.
	verified *expirable.LRU[string, verifiedToken]
}

type verifiedToken struct {
	caller Caller
	exp    time.Time
}

// maxVerified bounds the verified-token cache; past it, the token used longest ago goes.
const maxVerified = 10_000

// NewTokens returns a token issuer/verifier with the given secret and lifetime.
func NewTokens(secret []byte, ttl time.Duration) *Tokens {
	// A verified token is forgotten at the latest a token lifetime after its last use (0: no
	// lifetime), so that the cache does not keep expired tokens until they are crowded out.
	t := &Tokens{secret: secret, ttl: ttl, now: time.Now, verified: expirable.NewLRU[string, verifiedToken](maxVerified, nil, max(ttl, 0))}
	t.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
	)
	return t
}

// Issue returns a signed token for c, valid for the configured lifetime.
func (t *Tokens) Issue(c Caller) (string, error) {
	now := t.now()
	roles := c.Roles
	if roles == nil {
		roles = []string{}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		Email: c.Email,
		Roles: roles,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   c.ID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(t.ttl)),
		},
	})
	s, err := tok.SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return s, nil
}

// Verify checks a token's signature (HS256 only), expiry (required) and subject, and returns
// its caller. Every failure is ErrInvalidToken.
func (t *Tokens) Verify(token string) (Caller, error) {
	now := t.now()
	if v, ok := t.verified.Get(token); ok {
		if now.Before(v.exp) {
			return v.caller, nil
		}
		t.verified.Remove(token)
		return Caller{}, ErrInvalidToken
	}
	var c claims
	parsed, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil || !parsed.Valid || c.Subject == "" || c.ExpiresAt == nil {
		return Caller{}, ErrInvalidToken
	}
	caller := Caller{ID: c.Subject, Email: c.Email, Roles: c.Roles}
	t.verified.Add(token, verifiedToken{caller: caller, exp: c.ExpiresAt.Time})
	return caller, nil
}

package auth

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
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

	// verified remembers tokens that passed a full check, by their exact text, so that a
	// client's repeated requests skip the parse and MAC; expiry is still checked every time.
	mu       sync.RWMutex
	verified map[string]verifiedToken
}

type verifiedToken struct {
	caller Caller
	exp    time.Time
}

// maxVerified bounds the verified-token cache.
const maxVerified = 10_000

// NewTokens returns a token issuer/verifier with the given secret and lifetime.
func NewTokens(secret []byte, ttl time.Duration) *Tokens {
	t := &Tokens{secret: secret, ttl: ttl, now: time.Now, verified: make(map[string]verifiedToken)}
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
	t.mu.RLock()
	v, ok := t.verified[token]
	t.mu.RUnlock()
	if ok {
		if now.Before(v.exp) {
			return v.caller, nil
		}
		t.mu.Lock()
		delete(t.verified, token)
		t.mu.Unlock()
		return Caller{}, ErrInvalidToken
	}
	var c claims
	parsed, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil || !parsed.Valid || c.Subject == "" || c.ExpiresAt == nil {
		return Caller{}, ErrInvalidToken
	}
	caller := Caller{ID: c.Subject, Email: c.Email, Roles: c.Roles}
	t.mu.Lock()
	if len(t.verified) >= maxVerified {
		for k := range t.verified { // full: forget an arbitrary entry
			delete(t.verified, k)
			break
		}
	}
	t.verified[token] = verifiedToken{caller: caller, exp: c.ExpiresAt.Time}
	t.mu.Unlock()
	return caller, nil
}

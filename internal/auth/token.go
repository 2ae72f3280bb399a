package auth

import (
	"errors"
	"fmt"
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
func (c Caller) HasRole(role string) bool {
	for _, r := range c.Roles {
		if r == role {
			return true
		}
	}
	return false
}

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
}

// NewTokens returns a token issuer/verifier with the given secret and lifetime.
func NewTokens(secret []byte, ttl time.Duration) *Tokens {
	t := &Tokens{secret: secret, ttl: ttl, now: time.Now}
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
	var c claims
	parsed, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil || !parsed.Valid || c.Subject == "" {
		return Caller{}, ErrInvalidToken
	}
	return Caller{ID: c.Subject, Email: c.Email, Roles: c.Roles}, nil
}

// Package auth owns the users collection and access tokens: registration, login, profiles,
// roles, password hashing and JWT issue/verify.
package auth

// Package admin is what an administrator manages from the console: every user with their
// roles, this month's AI spend and own monthly budget. It composes the auth, budget and usage
// services and adds no storage of its own.
package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/usage"
)

// User is one element of GET /api/admin/users: never a password or its hash.
type User struct {
	ID    string   `json:"id"`
	Email string   `json:"email"`
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
	// MonthSpent is the user's recorded AI cost of the current UTC month, in USD.
	MonthSpent float64 `json:"monthSpent"`
	// Budget is the user's own monthly budget in USD; nil: none of their own (the default,
	// if configured, applies).
	Budget *float64 `json:"budget"`
}

// Service answers the administrators' routes.
type Service struct {
	auth   *auth.Service
	budget *budget.Service
	usage  *usage.Service
	now    func() time.Time
}

// New returns the service over the three it composes; now is the clock of "this month"
// (nil: time.Now).
func New(a *auth.Service, b *budget.Service, u *usage.Service, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{auth: a, budget: b, usage: u, now: now}
}

// monthWindow returns the first day of the current UTC month and today (YYYY-MM-DD).
func (s *Service) monthWindow() (from, to string, days int) {
	today := s.now().UTC()
	return today.Format("2006-01") + "-01", usage.Day(today), today.Day()
}

// MaxPage is the most users one page of Users holds, and its size when none is asked for.
const MaxPage = 1000

// Users returns a page of users by id, oldest first: up to limit (0: MaxPage) after the user
// with id after ("": from the first), with this month's spend and their own budget, and the
// id to pass as after for the next page ("": this is the last). Returns Invalid for a limit
// outside 0..MaxPage or a malformed after.
func (s *Service) Users(ctx context.Context, after string, limit int) ([]User, string, error) {
	switch {
	case limit == 0:
		limit = MaxPage
	case limit < 1:
		return nil, "", apperr.Validation("limit must not be less than 1")
	case limit > MaxPage:
		return nil, "", apperr.Validation(fmt.Sprintf("limit must not be greater than %d", MaxPage))
	}
	views, more, err := s.auth.ListPage(ctx, after, limit)
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(views))
	for i, v := range views {
		ids[i] = v.ID
	}
	from, to, _ := s.monthWindow()
	spent, err := s.usage.CostByUser(ctx, ids, from, to)
	if err != nil {
		return nil, "", fmt.Errorf("admin: month spend: %w", err)
	}
	out := make([]User, len(views))
	for i, v := range views {
		limit, err := s.budget.OwnLimit(ctx, v.ID)
		if err != nil {
			return nil, "", err
		}
		out[i] = row(v, spent[v.ID], limit)
	}
	next := ""
	if more && len(out) > 0 {
		next = out[len(out)-1].ID
	}
	return out, next, nil
}

// User returns one user as Users answers them. Returns Invalid for a malformed id, NotFound
// for an unknown one.
func (s *Service) User(ctx context.Context, userID string) (*User, error) {
	v, err := s.auth.UserByID(ctx, userID)
	if err != nil {
		return nil, err
	}
	return s.withMoney(ctx, v)
}

// SetBudget gives the user their own monthly budget of limit USD (nil: none of their own)
// and returns them. Returns Invalid for a malformed id or a limit outside 0..budget.MaxLimit,
// NotFound for an unknown user.
func (s *Service) SetBudget(ctx context.Context, userID string, limit *float64) (*User, error) {
	v, err := s.auth.UserByID(ctx, userID)
	if err != nil {
		return nil, err
	}
	if _, err := s.budget.SetLimit(ctx, v.ID, limit); err != nil {
		return nil, err
	}
	return s.withMoney(ctx, v)
}

// Grant gives the user a known role and returns them.
func (s *Service) Grant(ctx context.Context, userID, role string) (*User, error) {
	v, err := s.auth.GrantByID(ctx, userID, role)
	if err != nil {
		return nil, err
	}
	return s.withMoney(ctx, v)
}

// Revoke takes a known role from the user and returns them. An administrator cannot take
// admin from themselves (Invalid): the last one would lock everyone out of this page. Nor can
// admin be taken from the last user holding it (Conflict): two admins revoking each other at
// once would otherwise leave none. The role is taken first and given back when no admin is
// left, so that of two such requests at least one is refused whichever store writes first.
func (s *Service) Revoke(ctx context.Context, actorID, userID, role string) (*User, error) {
	if id, err := auth.ParseUserID(userID); err == nil && role == "admin" && id.Hex() == actorID {
		return nil, apperr.E(apperr.Invalid, "you cannot revoke your own admin role; another admin can")
	}
	v, err := s.auth.RevokeByID(ctx, userID, role)
	if err != nil {
		return nil, err
	}
	if role == "admin" {
		n, err := s.auth.CountWithRole(ctx, role)
		if err != nil {
			return nil, s.giveBack(ctx, userID, role, err)
		}
		if n == 0 {
			return nil, s.giveBack(ctx, userID, role,
				apperr.E(apperr.Conflict, "this user is the last admin: grant admin to another user first"))
		}
	}
	return s.withMoney(ctx, v)
}

// giveBack grants role to the user again after a revocation that must not stand, and returns
// why (cause), or why it could not be given back.
func (s *Service) giveBack(ctx context.Context, userID, role string, cause error) error {
	if _, err := s.auth.GrantByID(ctx, userID, role); err != nil {
		return fmt.Errorf("admin: give %s back to %s after %v: %w", role, userID, cause, err)
	}
	return cause
}

// withMoney adds the user's month spend and own budget.
func (s *Service) withMoney(ctx context.Context, v *auth.UserView) (*User, error) {
	_, _, days := s.monthWindow()
	sum, err := s.usage.Summary(ctx, v.ID, days)
	if err != nil {
		return nil, fmt.Errorf("admin: month spend: %w", err)
	}
	limit, err := s.budget.OwnLimit(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	u := row(*v, sum.TotalCost, limit)
	return &u, nil
}

func row(v auth.UserView, spent float64, limit *float64) User {
	roles := v.Roles
	if roles == nil {
		roles = []string{}
	}
	return User{ID: v.ID, Email: v.Email, Name: v.Name, Roles: roles, MonthSpent: usage.RoundCost(spent), Budget: limit}
}

package auth

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"golang.org/x/crypto/bcrypt"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/validate"
)

// UsersCollection is the collection this package owns.
const UsersCollection = "users"

// PasswordField is the field of a users document that holds the password's bcrypt hash.
const PasswordField = "password"

// user is a document of the users collection, shaped as the Mongoose model of the NestJS
// service this one replaces stores it.
type user struct {
	ID    primitive.ObjectID `bson:"_id"`
	Email string             `bson:"email"`
	// EmailNormalized is Email trimmed and lower-cased: logins find a user by one indexed
	// lookup of it, whatever casing the e-mail was stored with.
	EmailNormalized string    `bson:"emailNormalized,omitempty"`
	Password        string    `bson:"password"` // bcrypt hash (PasswordField)
	Name            string    `bson:"name"`
	Roles           []string  `bson:"roles"`
	CreatedAt       time.Time `bson:"createdAt"`
	UpdatedAt       time.Time `bson:"updatedAt"`
	Version         int       `bson:"__v"`
}

// UserView is a user as answered to clients: never the password or its hash.
type UserView struct {
	ID        string   `json:"id"`
	Email     string   `json:"email"`
	Name      string   `json:"name"`
	Roles     []string `json:"roles"`
	CreatedAt string   `json:"createdAt"`
}

// AuthResult is the answer to register and login.
type AuthResult struct {
	AccessToken string   `json:"accessToken"`
	User        UserView `json:"user"`
}

func (u *user) view() UserView {
	roles := u.Roles
	if roles == nil {
		roles = []string{}
	}
	return UserView{ID: u.ID.Hex(), Email: u.Email, Name: u.Name, Roles: roles,
		CreatedAt: u.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
}

// Service registers and authenticates users.
type Service struct {
	users  *mongo.Collection
	tokens *Tokens
	cost   int
	now    func() time.Time

	// dummyHash is compared against when a login names no user, so that an unknown e-mail
	// takes as long as a wrong password.
	dummyHash []byte
	// compare is bcrypt.CompareHashAndPassword; tests observe it.
	compare func(hash, password []byte) error

	// callers caches the current state of users that authenticated requests act for.
	callers callerCache
	// roles are the roles Grant gives: user, admin and those of AddRoles.
	roles map[string]bool
}

// BuiltinRoles are the roles the service itself knows: every user has "user"; "admin" opens
// the template migration and cleanup routes.
var BuiltinRoles = []string{"user", "admin"}

// AddRoles makes more roles grantable (auth.roles). Call it before serving.
func (s *Service) AddRoles(roles ...string) {
	for _, r := range roles {
		s.roles[r] = true
	}
}

// New returns the service on db's users collection. It gives users stored without a normalized
// e-mail their normalized one (normalizeStoredEmails), so that lookups by e-mail find them; it
// creates no index: the process that serves calls EnsureIndexes.
func New(ctx context.Context, db *mongo.Database, tokens *Tokens, bcryptCost int) (*Service, error) {
	if bcryptCost < bcrypt.MinCost || bcryptCost > bcrypt.MaxCost {
		return nil, fmt.Errorf("auth: bcrypt cost %d outside %d..%d", bcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("dummy password for timing"), bcryptCost)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	s := &Service{users: db.Collection(UsersCollection), tokens: tokens, cost: bcryptCost, now: time.Now,
		dummyHash: dummy, compare: bcrypt.CompareHashAndPassword}
	s.callers.init(CallerCacheTTL)
	s.roles = map[string]bool{}
	s.AddRoles(BuiltinRoles...)
	if err := s.normalizeStoredEmails(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// EnsureIndexes creates the users collection's indexes: the unique e-mail, which decides
// concurrent registrations, and the normalized e-mail every lookup uses. Creating an existing
// index is a no-op.
func (s *Service) EnsureIndexes(ctx context.Context) error {
	if err := store.EnsureIndexes(ctx, s.users,
		mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true).SetName("email_1")},
		mongo.IndexModel{Keys: bson.D{{Key: "emailNormalized", Value: 1}}, Options: options.Index().SetName("emailNormalized_1")},
	); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// normalizeStoredEmails sets emailNormalized on users stored without it (by an earlier version
// or by the NestJS service this one replaces), so that every user is found by one indexed
// lookup. It runs at every start and touches only users that lack the field.
func (s *Service) normalizeStoredEmails(ctx context.Context) error {
	cur, err := s.users.Find(ctx, bson.M{"emailNormalized": bson.M{"$exists": false}},
		options.Find().SetProjection(bson.M{"_id": 1, "email": 1}))
	if err != nil {
		return fmt.Errorf("auth: find users to normalize: %w", err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var u struct {
			ID    primitive.ObjectID `bson:"_id"`
			Email any                `bson:"email"`
		}
		if err := cur.Decode(&u); err != nil {
			return fmt.Errorf("auth: read user to normalize: %w", err)
		}
		email, ok := u.Email.(string)
		if !ok {
			continue // not an e-mail: such a user cannot log in anyway
		}
		if _, err := s.users.UpdateOne(ctx, bson.M{"_id": u.ID},
			bson.M{"$set": bson.M{"emailNormalized": normalizeEmail(email)}}); err != nil {
			return fmt.Errorf("auth: normalize e-mail of user %s: %w", u.ID.Hex(), err)
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("auth: normalize e-mails: %w", err)
	}
	return nil
}

// Register creates a user with role "user" and returns a token for it.
// Returns Invalid for a body that fails validation, Conflict when the e-mail is taken.
func (s *Service) Register(ctx context.Context, in RegisterInput) (*AuthResult, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(in.Password), s.cost)
	if err != nil {
		if errors.Is(err, bcrypt.ErrPasswordTooLong) {
			return nil, apperr.Validation(validate.MaxLength("password", maxPasswordBytes))
		}
		return nil, fmt.Errorf("auth: hash password: %w", err)
	}
	email := normalizeEmail(in.Email)
	// A user stored with other casing (before e-mails were normalized) holds this e-mail too.
	if _, err := s.byEmail(ctx, email); err == nil {
		return nil, apperr.E(apperr.Conflict, "User with this email already exists")
	} else if !errors.Is(err, mongo.ErrNoDocuments) {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	u := &user{ID: primitive.NewObjectIDFromTimestamp(now), Email: email, EmailNormalized: email, Password: string(hash),
		Name: in.Name, Roles: []string{"user"}, CreatedAt: now, UpdatedAt: now}
	// The unique index decides races: two concurrent registrations give one user and one 409.
	if _, err := s.users.InsertOne(ctx, u); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return nil, apperr.E(apperr.Conflict, "User with this email already exists")
		}
		return nil, fmt.Errorf("auth: insert user: %w", err)
	}
	return s.result(u)
}

// Login checks an e-mail and password and returns a fresh token.
// Returns Unauthorized "Invalid credentials" for an unknown e-mail and a wrong password alike.
func (s *Service) Login(ctx context.Context, in LoginInput) (*AuthResult, error) {
	u, err := s.byEmail(ctx, in.Email)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return nil, err
	}
	// One comparison whatever the answer, so that an unknown e-mail takes as long as a wrong
	// password. bcrypt reads only a password's first 72 bytes, and no stored password is
	// longer: a longer one is wrong, not cut.
	pw, hash := []byte(in.Password), s.dummyHash
	if u != nil {
		hash = []byte(u.Password)
	}
	if s.compare(hash, pw) != nil || u == nil || len(pw) > maxPasswordBytes {
		return nil, apperr.E(apperr.Unauthorized, "Invalid credentials")
	}
	s.rehash(ctx, u, pw)
	return s.result(u)
}

// rehash stores u's password hashed at the configured cost when its hash has another (the
// operator changed auth.bcrypt_cost, or the hash was imported): until then a wrong password
// for u takes another time than one for an unknown e-mail. Only if the hash is still the one
// checked; a failure leaves the old hash, which still works.
func (s *Service) rehash(ctx context.Context, u *user, pw []byte) {
	if cost, err := bcrypt.Cost([]byte(u.Password)); err != nil || cost == s.cost {
		return
	}
	hash, err := bcrypt.GenerateFromPassword(pw, s.cost)
	if err != nil {
		return
	}
	_, _ = s.users.UpdateOne(ctx, bson.M{"_id": u.ID, PasswordField: u.Password}, bson.M{"$set": bson.M{PasswordField: string(hash)}})
}

// Profile returns the user as stored now. Returns Unauthorized when the user no longer exists.
func (s *Service) Profile(ctx context.Context, userID string) (*UserView, error) {
	id, err := primitive.ObjectIDFromHex(userID)
	if err != nil {
		return nil, apperr.E(apperr.Unauthorized, "Unauthorized")
	}
	var u user
	if err := s.users.FindOne(ctx, bson.M{"_id": id}).Decode(&u); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, apperr.E(apperr.Unauthorized, "Unauthorized")
		}
		return nil, fmt.Errorf("auth: find user: %w", err)
	}
	v := u.view()
	return &v, nil
}

// List returns every user, oldest first.
func (s *Service) List(ctx context.Context) ([]UserView, error) {
	return s.views(ctx, bson.M{}, options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}}))
}

// views returns the users filter finds, in opts' order, without their password hashes.
func (s *Service) views(ctx context.Context, filter bson.M, opts *options.FindOptions) ([]UserView, error) {
	cur, err := s.users.Find(ctx, filter, opts.SetProjection(bson.M{PasswordField: 0}))
	if err != nil {
		return nil, fmt.Errorf("auth: list users: %w", err)
	}
	var users []user
	if err := cur.All(ctx, &users); err != nil {
		return nil, fmt.Errorf("auth: list users: %w", err)
	}
	out := make([]UserView, len(users))
	for i := range users {
		out[i] = users[i].view()
	}
	return out, nil
}

// ListPage returns up to limit users by id, oldest first, after the user with id after ("":
// from the first), and whether more follow. Returns Invalid for a malformed after.
func (s *Service) ListPage(ctx context.Context, after string, limit int) ([]UserView, bool, error) {
	filter := bson.M{}
	if after != "" {
		id, err := primitive.ObjectIDFromHex(after)
		if err != nil {
			return nil, false, apperr.E(apperr.Invalid, "after must be a user id (24 hexadecimal digits)")
		}
		filter["_id"] = bson.M{"$gt": id}
	}
	out, err := s.views(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	more := len(out) > limit
	return out[:min(len(out), limit)], more, nil
}

// Grant gives the user with email the role. Returns Invalid for a role that is not known
// (BuiltinRoles and AddRoles), NotFound for an unknown e-mail.
func (s *Service) Grant(ctx context.Context, email, role string) (*UserView, error) {
	if role != "" {
		if err := s.CheckRole(role); err != nil {
			return nil, err
		}
	}
	return s.updateRoles(ctx, email, role, "$addToSet")
}

// Revoke takes the role from the user with email. Returns NotFound for an unknown e-mail.
func (s *Service) Revoke(ctx context.Context, email, role string) (*UserView, error) {
	return s.updateRoles(ctx, email, role, "$pull")
}

// CheckRole returns Invalid, naming the known roles, for a role that is not one of them
// (BuiltinRoles and AddRoles).
func (s *Service) CheckRole(role string) error {
	if s.roles[role] {
		return nil
	}
	known := make([]string, 0, len(s.roles))
	for r := range s.roles {
		known = append(known, r)
	}
	sort.Strings(known)
	return apperr.E(apperr.Invalid, fmt.Sprintf("unknown role %q: known roles are %s (more can be listed in auth.roles)",
		role, strings.Join(known, ", ")))
}

// ParseUserID returns the stored id of a user id as clients see it (24 hex digits); Invalid
// otherwise.
func ParseUserID(userID string) (primitive.ObjectID, error) {
	id, err := primitive.ObjectIDFromHex(userID)
	if err != nil {
		return id, apperr.E(apperr.Invalid, "id must be a user id (24 hexadecimal digits)")
	}
	return id, nil
}

// UserByID returns the user with the id. Returns Invalid for a malformed id, NotFound for an
// unknown one.
func (s *Service) UserByID(ctx context.Context, userID string) (*UserView, error) {
	id, err := ParseUserID(userID)
	if err != nil {
		return nil, err
	}
	var u user
	if err := s.users.FindOne(ctx, bson.M{"_id": id}, options.FindOne().SetProjection(bson.M{PasswordField: 0})).Decode(&u); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, apperr.E(apperr.NotFound, "no user with id "+userID)
		}
		return nil, fmt.Errorf("auth: find user: %w", err)
	}
	v := u.view()
	return &v, nil
}

// CountWithRole returns how many users hold role.
func (s *Service) CountWithRole(ctx context.Context, role string) (int64, error) {
	n, err := s.users.CountDocuments(ctx, bson.M{"roles": role})
	if err != nil {
		return 0, fmt.Errorf("auth: count users with role %s: %w", role, err)
	}
	return n, nil
}

// GrantByID gives the user with the id a known role (a no-op when they have it). Returns
// Invalid for a malformed id or an unknown role, NotFound for an unknown user.
func (s *Service) GrantByID(ctx context.Context, userID, role string) (*UserView, error) {
	if err := s.CheckRole(role); err != nil {
		return nil, err
	}
	return s.updateRolesByID(ctx, userID, role, "$addToSet")
}

// RevokeByID takes a known role from the user with the id (a no-op when they lack it).
// Returns Invalid for a malformed id or an unknown role, NotFound for an unknown user.
func (s *Service) RevokeByID(ctx context.Context, userID, role string) (*UserView, error) {
	if err := s.CheckRole(role); err != nil {
		return nil, err
	}
	return s.updateRolesByID(ctx, userID, role, "$pull")
}

func (s *Service) updateRoles(ctx context.Context, email, role, op string) (*UserView, error) {
	if role == "" {
		return nil, apperr.E(apperr.Invalid, validate.NotEmpty("role"))
	}
	u, err := s.knownEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	return s.updateRolesByID(ctx, u.ID.Hex(), role, op)
}

// updateRolesByID applies op ($addToSet or $pull) of role to the user's roles.
func (s *Service) updateRolesByID(ctx context.Context, userID, role, op string) (*UserView, error) {
	id, err := ParseUserID(userID)
	if err != nil {
		return nil, err
	}
	update := bson.M{op: bson.M{"roles": role}, "$set": bson.M{"updatedAt": s.now().UTC()}}
	var out user
	err = s.users.FindOneAndUpdate(ctx, bson.M{"_id": id}, update,
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&out)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, apperr.E(apperr.NotFound, "no user with id "+userID)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: update roles: %w", err)
	}
	s.callers.forget(out.ID.Hex())
	v := out.view()
	return &v, nil
}

// UserByEmail returns the user with email, in any casing. Returns NotFound for an unknown
// e-mail.
func (s *Service) UserByEmail(ctx context.Context, email string) (*UserView, error) {
	u, err := s.knownEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	v := u.view()
	return &v, nil
}

// knownEmail is byEmail with an unknown e-mail as NotFound, naming it.
func (s *Service) knownEmail(ctx context.Context, email string) (*user, error) {
	u, err := s.byEmail(ctx, email)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, apperr.E(apperr.NotFound, fmt.Sprintf("no user with e-mail %s", email))
	}
	return u, err
}

// byEmail finds a user by e-mail, case-insensitively, in one indexed lookup of the normalized
// e-mail: new users are stored lower-cased, and users stored with other casing by the NestJS
// service this one replaces were given the normalized field at start (normalizeStoredEmails).
func (s *Service) byEmail(ctx context.Context, email string) (*user, error) {
	var u user
	err := s.users.FindOne(ctx, bson.M{"emailNormalized": normalizeEmail(email)}).Decode(&u)
	if err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, err
		}
		return nil, fmt.Errorf("auth: find user: %w", err)
	}
	return &u, nil
}

func (s *Service) result(u *user) (*AuthResult, error) {
	token, err := s.tokens.Issue(Caller{ID: u.ID.Hex(), Email: u.Email, Roles: u.Roles})
	if err != nil {
		return nil, err
	}
	return &AuthResult{AccessToken: token, User: u.view()}, nil
}

package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/usage"
)

// adminOf registers a user, grants them admin and returns their id and token (roles are read
// from the account on each request, so the token issued before the grant carries it).
func (fx *gwFixture) adminOf(t *testing.T) (string, string) {
	t.Helper()
	id, tok := fx.user(t)
	if _, err := fx.auth.GrantByID(context.Background(), id, "admin"); err != nil {
		t.Fatal(err)
	}
	return id, tok
}

const forbidden = `{"statusCode":403,"message":"Forbidden resource","error":"Forbidden"}`

// Ensure GET /api/ai/usage/daily answers one entry per day, oldest first, today's holding the
// caller's call, summing to /api/ai/usage; bad days are a 400 and no token a 401.
func TestUsageDailyRoute(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	if rec := do(fx.h, "POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi there"}]}`, tok); rec.Code != 200 {
		t.Fatalf("chat: %d %s", rec.Code, rec.Body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sum := decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage", "", tok).Body.Bytes())
		if sum.TotalRequests == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call was not recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	today := usage.Day(time.Now())
	for _, tc := range []struct {
		query string
		days  int
	}{{"", 30}, {"?days=7", 7}, {"?days=1", 1}, {"?days=90", 90}} {
		t.Run("days"+tc.query, func(t *testing.T) {
			rec := do(fx.h, "GET", "/api/ai/usage/daily"+tc.query, "", tok)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			days := decodeJSON[[]usage.DayUsage](t, rec.Body.Bytes())
			if len(days) != tc.days || days[len(days)-1].Date != today {
				t.Fatalf("%d entries ending %v, want %d ending %s", len(days), days[len(days)-1], tc.days, today)
			}
			sum := decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage"+tc.query, "", tok).Body.Bytes())
			var requests, tokens int64
			for _, d := range days {
				requests, tokens = requests+d.Requests, tokens+d.Tokens
			}
			if requests != sum.TotalRequests || tokens != sum.TotalTokens || days[len(days)-1].Requests != 1 {
				t.Fatalf("days sum to %d requests, %d tokens; usage says %+v", requests, tokens, sum)
			}
		})
	}
	for _, tc := range []struct {
		name, query, token string
		status             int
	}{
		{"ZeroDays", "?days=0", tok, 400},
		{"TooManyDays", "?days=367", tok, 400},
		{"NotANumber", "?days=week", tok, 400},
		{"NoToken", "?days=7", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec := do(fx.h, "GET", "/api/ai/usage/daily"+tc.query, "", tc.token); rec.Code != tc.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.status)
			}
		})
	}
}

// Ensure the admin routes answer 403 to anyone but an admin, 401 without a token, and change
// nothing when they refuse.
func TestAdminRoutes_OnlyAdmins(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	id, tok := fx.user(t)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/admin/users", ""},
		{"PUT", "/api/admin/users/" + id + "/budget", `{"limit":5}`},
		{"PUT", "/api/admin/users/" + id + "/roles/admin", ""},
		{"DELETE", "/api/admin/users/" + id + "/roles/user", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			if rec := do(fx.h, tc.method, tc.path, tc.body, tok); rec.Code != 403 || strings.TrimSpace(rec.Body.String()) != forbidden {
				t.Errorf("as a user: %d %s", rec.Code, rec.Body)
			}
			if rec := do(fx.h, tc.method, tc.path, tc.body, ""); rec.Code != 401 {
				t.Errorf("anonymous: %d %s", rec.Code, rec.Body)
			}
		})
	}
	st, err := fx.budget.Status(context.Background(), id)
	if err != nil || st.Limit != nil {
		t.Fatalf("a refused PUT set a budget: %+v %v", st, err)
	}
	u, err := fx.auth.UserByID(context.Background(), id)
	if err != nil || strings.Join(u.Roles, ",") != "user" {
		t.Fatalf("a refused PUT changed roles: %+v %v", u, err)
	}
}

// Ensure an admin lists every user with roles, month spend and budget, never a password.
func TestAdminUsers_List(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	adminID, adminTok := fx.adminOf(t)
	id, tok := fx.user(t)
	if rec := do(fx.h, "POST", "/api/ai/openai/chat", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, tok); rec.Code != 200 {
		t.Fatalf("chat: %d %s", rec.Code, rec.Body)
	}
	if _, err := fx.budget.SetLimit(context.Background(), adminID, ptr(7.5)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes()).TotalRequests != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the call was not recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec := do(fx.h, "GET", "/api/admin/users", "", adminTok)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if body := rec.Body.String(); strings.Contains(body, "password") || strings.Contains(body, "$2a$") {
		t.Fatalf("the list shows a password: %s", body)
	}
	rows := map[string]admin.User{}
	for _, u := range decodeJSON[[]admin.User](t, rec.Body.Bytes()) {
		rows[u.ID] = u
	}
	st, err := fx.budget.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	u, a := rows[id], rows[adminID]
	if u.Email == "" || u.Name != "Test User" || strings.Join(u.Roles, ",") != "user" || u.Budget != nil || u.MonthSpent != st.Spent || u.MonthSpent <= 0 {
		t.Errorf("user row %+v (budget spent %v)", u, st.Spent)
	}
	if strings.Join(a.Roles, ",") != "user,admin" || a.Budget == nil || *a.Budget != 7.5 || a.MonthSpent != 0 {
		t.Errorf("admin row %+v", a)
	}
}

// Ensure GET /api/admin/users pages: ?limit=N answers N users oldest first and a Link to the
// next page, which goes on from the last of them until a page without a Link; a bad limit or
// after is a 400.
func TestAdminUsers_Pages(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	adminID, adminTok := fx.adminOf(t)
	want := []string{adminID}
	for range 4 {
		id, _ := fx.user(t)
		want = append(want, id)
	}
	var got []string
	var sizes []int
	path := "/api/admin/users?limit=2"
	for path != "" {
		rec := do(fx.h, "GET", path, "", adminTok)
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		page := decodeJSON[[]admin.User](t, rec.Body.Bytes())
		sizes = append(sizes, len(page))
		for _, u := range page {
			got = append(got, u.ID)
		}
		path = ""
		if link := rec.Header().Get("Link"); link != "" {
			next, ok := strings.CutPrefix(link, "<")
			next, rest, _ := strings.Cut(next, ">")
			if !ok || rest != `; rel="next"` || !strings.Contains(next, "limit=2") {
				t.Fatalf("Link %q", link)
			}
			path = next
		}
		if len(sizes) > 5 {
			t.Fatal("the pages do not end")
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || fmt.Sprint(sizes) != "[2 2 1]" {
		t.Fatalf("pages of sizes %v hold %v, want %v", sizes, got, want)
	}
	if rec := do(fx.h, "GET", "/api/admin/users", "", adminTok); rec.Header().Get("Link") != "" ||
		len(decodeJSON[[]admin.User](t, rec.Body.Bytes())) != 5 {
		t.Fatalf("the default page: Link %q, %s", rec.Header().Get("Link"), rec.Body)
	}
	for query, msg := range map[string]string{
		"limit=0":                        "limit must not be less than 1",
		"limit=1001":                     "limit must not be greater than 1000",
		"limit=two":                      "limit must be an integer number",
		"after=nope":                     "after must be a user id",
		"after=" + want[1] + "&limit=-3": "limit must not be less than 1",
	} {
		rec := do(fx.h, "GET", "/api/admin/users?"+query, "", adminTok)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), msg) {
			t.Errorf("?%s: %d %s, want 400 %q", query, rec.Code, rec.Body, msg)
		}
	}
}

// Ensure PUT /api/admin/users/{id}/budget sets and clears a user's own budget (stored, and
// shown by the user's GET /api/ai/budget) and answers 400 to anything but a number from 0 to
// the maximum or null, 404 to an unknown user, changing nothing.
func TestAdminBudget(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, adminTok := fx.adminOf(t)
	id, tok := fx.user(t)
	stored := func() any {
		var doc bson.M
		if err := fx.db.Collection(budget.Collection).FindOne(context.Background(), bson.M{"_id": id}).Decode(&doc); err != nil {
			return "none"
		}
		return doc["limit"]
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             any // the limit stored after
	}{
		{"Set", "/api/admin/users/" + id + "/budget", `{"limit":12.5}`, 200, 12.5},
		{"Negative", "/api/admin/users/" + id + "/budget", `{"limit":-1}`, 400, 12.5},
		{"String", "/api/admin/users/" + id + "/budget", `{"limit":"12"}`, 400, 12.5},
		{"Boolean", "/api/admin/users/" + id + "/budget", `{"limit":true}`, 400, 12.5},
		{"Array", "/api/admin/users/" + id + "/budget", `{"limit":[5]}`, 400, 12.5},
		{"OverMax", "/api/admin/users/" + id + "/budget", `{"limit":100000001}`, 400, 12.5},
		{"RoundsToNothing", "/api/admin/users/" + id + "/budget", `{"limit":1e-12}`, 400, 12.5},
		{"Missing", "/api/admin/users/" + id + "/budget", `{}`, 400, 12.5},
		{"NotJSON", "/api/admin/users/" + id + "/budget", `{"limit": 5`, 400, 12.5},
		{"NotAnID", "/api/admin/users/nope/budget", `{"limit":1}`, 400, 12.5},
		{"UnknownUser", "/api/admin/users/65f000000000000000000001/budget", `{"limit":1}`, 404, 12.5},
		{"Zero", "/api/admin/users/" + id + "/budget", `{"limit":0}`, 200, 0.0},
		{"Clear", "/api/admin/users/" + id + "/budget", `{"limit":null}`, 200, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(fx.h, "PUT", tc.path, tc.body, adminTok)
			if rec.Code != tc.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status >= 400 && !strings.Contains(rec.Body.String(), `"statusCode":`) {
				t.Fatalf("not the envelope: %s", rec.Body)
			}
			if got := stored(); got != tc.want {
				t.Fatalf("stored limit %v, want %v", got, tc.want)
			}
			if tc.status != 200 {
				return
			}
			row := decodeJSON[admin.User](t, rec.Body.Bytes())
			st := decodeJSON[budget.Status](t, do(fx.h, "GET", "/api/ai/budget", "", tok).Body.Bytes())
			if tc.want == nil {
				if row.Budget != nil || st.Limit != nil {
					t.Fatalf("after clearing: row %+v, budget %+v", row, st)
				}
				return
			}
			if row.ID != id || row.Budget == nil || *row.Budget != tc.want || st.Limit == nil || *st.Limit != tc.want {
				t.Fatalf("row %+v, budget %+v, want %v", row, st, tc.want)
			}
		})
	}
}

// Ensure an admin grants and revokes known roles (effective on the user's next request),
// refuses unknown roles and revoking their own admin.
func TestAdminRoles(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	adminID, adminTok := fx.adminOf(t)
	id, tok := fx.user(t)
	for _, tc := range []struct {
		name, method, path string
		status             int
		roles              string // the user's roles after
		userListStatus     int    // what the user then gets from GET /api/admin/users
	}{
		{"Grant", "PUT", "/api/admin/users/" + id + "/roles/admin", 200, "user,admin", 200},
		{"GrantAgain", "PUT", "/api/admin/users/" + id + "/roles/admin", 200, "user,admin", 200},
		{"UnknownRole", "PUT", "/api/admin/users/" + id + "/roles/root", 400, "user,admin", 200},
		{"UnknownRoleRevoke", "DELETE", "/api/admin/users/" + id + "/roles/root", 400, "user,admin", 200},
		{"NotAnID", "PUT", "/api/admin/users/x/roles/admin", 400, "user,admin", 200},
		{"UnknownUser", "PUT", "/api/admin/users/65f000000000000000000001/roles/admin", 404, "user,admin", 200},
		{"Revoke", "DELETE", "/api/admin/users/" + id + "/roles/admin", 200, "user", 403},
		{"RevokeOwnAdmin", "DELETE", "/api/admin/users/" + adminID + "/roles/admin", 400, "user", 403},
		{"RevokeOwnAdminUpperCase", "DELETE", "/api/admin/users/" + strings.ToUpper(adminID) + "/roles/admin", 400, "user", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(fx.h, tc.method, tc.path, "", adminTok)
			if rec.Code != tc.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status == 200 {
				if row := decodeJSON[admin.User](t, rec.Body.Bytes()); strings.Join(row.Roles, ",") != tc.roles {
					t.Fatalf("row roles %v, want %s", row.Roles, tc.roles)
				}
			}
			u, err := fx.auth.UserByID(context.Background(), id)
			if err != nil || strings.Join(u.Roles, ",") != tc.roles {
				t.Fatalf("stored roles %v (%v), want %s", u.Roles, err, tc.roles)
			}
			if rec := do(fx.h, "GET", "/api/admin/users", "", tok); rec.Code != tc.userListStatus {
				t.Fatalf("the user's GET /api/admin/users: %d, want %d", rec.Code, tc.userListStatus)
			}
		})
	}
	if a, err := fx.auth.UserByID(context.Background(), adminID); err != nil || !strings.Contains(strings.Join(a.Roles, ","), "admin") {
		t.Fatalf("the admin lost admin: %+v %v", a, err)
	}
}

// Ensure admin is never taken from the last user holding it: two admins revoking each other at
// once leave at least one (the other request answers 409), and a revocation whose actor lost
// admin meanwhile (the service is called for them) is refused with the role given back.
func TestAdminRevokeLastAdmin(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	ctx := context.Background()
	aID, aTok := fx.adminOf(t)
	bID, bTok := fx.adminOf(t)
	admins := func() int64 {
		n, err := fx.db.Collection("users").CountDocuments(ctx, bson.M{"roles": "admin"})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for round := range 20 {
		codes := make(chan int, 2)
		for _, r := range []struct{ tok, target string }{{aTok, bID}, {bTok, aID}} {
			go func() { codes <- do(fx.h, "DELETE", "/api/admin/users/"+r.target+"/roles/admin", "", r.tok).Code }()
		}
		c1, c2 := <-codes, <-codes
		if n := admins(); n != 1 && n != 2 {
			t.Fatalf("round %d: %d admins left (answers %d, %d)", round, n, c1, c2)
		}
		for _, c := range []int{c1, c2} {
			if c != 200 && c != 403 && c != 409 {
				t.Fatalf("round %d: answers %d, %d", round, c1, c2)
			}
		}
		for _, id := range []string{aID, bID} {
			if _, err := fx.auth.GrantByID(ctx, id, "admin"); err != nil {
				t.Fatal(err)
			}
		}
	}

	if _, err := fx.auth.RevokeByID(ctx, bID, "admin"); err != nil {
		t.Fatal(err)
	}
	svc := admin.New(fx.auth, fx.budget, fx.usage, nil)
	_, err := svc.Revoke(ctx, bID, aID, "admin")
	if apperr.KindOf(err) != apperr.Conflict {
		t.Fatalf("revoking the last admin: %v, want a Conflict", err)
	}
	if n := admins(); n != 1 {
		t.Fatalf("%d admins after a refused revocation, want 1", n)
	}
}

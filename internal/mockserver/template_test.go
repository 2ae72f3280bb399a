package mockserver

import (
	"fmt"
	"strings"
	"testing"
)

// Ensure templates run with bounds: a count written into the template over the limit is
// refused when the mock is added (400), a count reached at run time or an answer over 10 MB
// is a 500 HANDLER_EXECUTION_ERROR and the server goes on, and {{.Body.x}} on a body that
// is not a JSON object answers 400 naming the route.
func TestTemplate_Bounds(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, "m.yaml", "mocks: {}\n", nil)
	for _, tc := range []struct {
		name, spec string
		wantAdd    int
		body       string
		wantStatus int
		wantIn     string
	}{
		{"SeqLiteral", `{"body": "{{len (seq 2000000000)}}"}`, 400, "", 0, ""},
		{"StringLiteral", `{"body": "{{string 20000}}"}`, 400, "", 0, ""},
		{"RangeLiteral", `{"body": "{{range 20000}}x{{end}}"}`, 400, "", 0, ""},
		{"SeqAtLimit", `{"body": "{{len (seq 10000)}}"}`, 201, "", 200, "10000"},
		{"NestedRanges", `{"body": "{{range 10000}}{{range seq 10000}}{{end}}{{end}}"}`, 400, "", 0, ""},
		{"NestedRunTimeCount", `{"body": "{{range 200}}{{range seq (int 1 5)}}{{end}}{{end}}"}`, 400, "", 0, ""},
		{"NestedSmall", `{"body": "{{range 100}}{{range seq 100}}.{{end}}{{end}}"}`, 201, "", 200, ".........."},
		{"SeqAtRunTime", `{"body": "{{len (seq (int 20000 30000))}}"}`, 201, "", 500, "HANDLER_EXECUTION_ERROR"},
		{"AnswerTooLarge", `{"body": "{{range seq 10000}}{{string 10000}}{{end}}"}`, 201, "", 500, "HANDLER_EXECUTION_ERROR"},
		// Text made by functions counts even when it is only kept in a variable: doubling a
		// value from variable to variable, or remaking one in a loop, stops at 40 MB made.
		{"ValuesGrowingInVariables", `{"body": "{{$a := string 10000}}{{$b := printf \"%s%s%s%s%s%s%s%s%s%s\" $a $a $a $a $a $a $a $a $a $a}}{{$c := print $b $b $b $b $b $b $b $b $b $b}}{{$d := printf \"%s%s%s%s%s%s%s%s%s%s\" $c $c $c $c $c $c $c $c $c $c}}{{$e := printf \"%s%s%s%s%s%s%s%s%s%s\" $d $d $d $d $d $d $d $d $d $d}}{{len $e}}"}`, 201, "", 500, "HANDLER_EXECUTION_ERROR"},
		{"ValuesRemadeInALoop", `{"body": "{{$a := string 10000 \"<\"}}{{range seq 10000}}{{$b := html $a}}{{end}}done"}`, 201, "", 500, "HANDLER_EXECUTION_ERROR"},
		{"PaddingOverTheBound", `{"body": "{{printf \"%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d\" 1 2 3 4 5 6 7 8 9 10 | len}}"}`, 201, "", 200, "10000000"},
		{"PaddingOverTheValues", `{"body": "{{range seq 5}}{{$x := printf \"%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d%01000000d\" 1 2 3 4 5 6 7 8 9 10}}{{end}}"}`, 201, "", 500, "HANDLER_EXECUTION_ERROR"},
		{"StarWidth", `{"body": "{{range seq 50}}{{$x := printf \"%0*d\" 1000000 7}}{{end}}"}`, 201, "", 500, "HANDLER_EXECUTION_ERROR"},
		{"ManySmallValues", `{"body": "{{range seq 1000}}{{printf \"%05d,\" .}}{{end}}"}`, 201, "", 200, "00999,"},
		{"BodyFieldOnArray", `{"data": {"email": "{{.Body.email}}"}}`, 201, `[1,2]`, 400, "POST /bounds-BodyFieldOnArray"},
		{"BodyFieldOnText", `{"data": {"email": "{{.Body.email}}"}}`, 201, `plain`, 400, "not a JSON object"},
		{"BodyFieldOnObject", `{"data": {"email": "{{.Body.email}}"}}`, 201, `{"email":"a@b.c"}`, 200, "a@b.c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route := "POST /bounds-" + tc.name
			a := do(t, "POST", hs.URL+"/__mock/mocks", fmt.Sprintf(`{%q: %s}`, route, tc.spec))
			if a.status != tc.wantAdd {
				t.Fatalf("add: %d %s, want %d", a.status, a.body, tc.wantAdd)
			}
			if tc.wantStatus == 0 {
				return
			}
			a = do(t, "POST", hs.URL+"/bounds-"+tc.name, tc.body, "Content-Type", "text/plain")
			if a.status != tc.wantStatus || !strings.Contains(a.body, tc.wantIn) {
				t.Fatalf("answer %d %.300s, want %d with %q", a.status, a.body, tc.wantStatus, tc.wantIn)
			}
		})
	}
	if a := do(t, "GET", hs.URL+"/__mock/stats", ""); a.status != 200 {
		t.Fatalf("the server is not answering after the bounds: %d", a.status)
	}
}

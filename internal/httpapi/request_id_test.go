package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/acme/app/internal/ai/aitest"
)

// Ensure a client that sends the same X-Request-Id on every AI call gets a new request id for
// each, and each call's usage record is stored: the request id is the record's _id, and a
// reused client id once made the log keep the first record only (the rollup counted every
// call, and a rebuild of it from the log would have forgotten the rest).
func TestAI_ClientRequestIDNeverKeysARecord(t *testing.T) {
	t.Parallel()
	answer := aitest.JSON(200, aitest.OpenAIAnswer("gpt-4o-mini", "hi there", 5, 8, 0))
	lv := newLiveAI(t, "openai", answer, answer, answer)
	const clientID = "0b7c7f54-2d0a-4f3e-9a57-3f1c2f9b8a11"
	ids := map[string]bool{}
	for range 3 {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", lv.url+aiPaths["openai"],
			strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+lv.token)
		req.Header.Set("X-Request-Id", clientID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			RequestID string `json:"requestId"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		id, perr := uuid.Parse(body.RequestID)
		if perr != nil || id.Version() != 7 || body.RequestID == clientID || ids[body.RequestID] ||
			resp.Header.Get("X-Request-Id") != body.RequestID {
			t.Fatalf("requestId %q, X-Request-Id %q: want a new version 7 UUID in both, unlike the client's",
				body.RequestID, resp.Header.Get("X-Request-Id"))
		}
		ids[body.RequestID] = true
	}
	recs := lv.records(t, 3)
	if len(recs) != 3 {
		t.Fatalf("%d records stored for 3 calls: %v", len(recs), recs)
	}
	for _, r := range recs {
		if !ids[r["_id"].(string)] {
			t.Errorf("record %v is not one of the answered ids %v", r["_id"], ids)
		}
	}
	if !strings.Contains(lv.log.String(), `"client_request_id":"`+clientID+`"`) {
		t.Errorf("the server log lacks the client's id")
	}
}

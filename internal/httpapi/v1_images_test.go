package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
)

// Ensure ai.max_image_bytes holds on both /v1 routes: an inline image larger than the limit,
// decoded, is refused with a 413 in the route's dialect (OpenAI's error object with code
// image_too_large and the param of the data URL on /v1/chat/completions; Anthropic's
// request_too_large naming the source's data on /v1/messages) and nothing reaches a
// provider; one of the limit's size or smaller reaches the provider as its wire format
// carries it.
func TestV1ImageSizeLimit(t *testing.T) {
	t.Parallel()
	const limit = 1024
	fx := newGWFixtureWith(t, Options{}, gateway.Options{MaxImageBytes: limit})
	uid, tok := fx.user(t)
	key, err := fx.keys.Create(context.Background(), uid, "", keys.CreateInput{Name: "sdk"})
	if err != nil {
		t.Fatal(err)
	}
	// image is n bytes as base64: sizes that are not multiples of 3 are padded, which is not
	// a part of the decoded size.
	image := func(n int) string {
		return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x89}, n))
	}
	chatBody := func(model, data string) string {
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},`+
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}]}`, model, data)
	}
	messagesBody := func(model, data string) string {
		return fmt.Sprintf(`{"model":%q,"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},`+
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}}]}]}`, model, data)
	}
	// What each provider is sent: the user's message, its text and the image.
	sent := map[string]func(data string) []any{
		"openai": func(data string) []any {
			return []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + data}}}}}
		},
		"anthropic": func(data string) []any {
			return []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is this?"},
				map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}}}}}
		},
	}
	for _, tc := range []struct {
		name, route, model string
		size               int
		status             int
		param              string // the parameter the refusal names
	}{
		{"chat, the limit's size", "chat", "openai/gpt-4o-mini", limit, 200, ""},
		{"chat, smaller, translated for anthropic", "chat", "anthropic/claude-haiku-4-5", limit - 24, 200, ""},
		{"chat, a byte over", "chat", "openai/gpt-4o-mini", limit + 1, 413, "messages[0].content[1].image_url.url"},
		{"chat, far over", "chat", "anthropic/claude-haiku-4-5", 4 * limit, 413, "messages[0].content[1].image_url.url"},
		{"messages, the limit's size", "messages", "anthropic/claude-haiku-4-5", limit, 200, ""},
		{"messages, smaller, translated for openai", "messages", "openai/gpt-4o-mini", limit - 24, 200, ""},
		{"messages, a byte over", "messages", "anthropic/claude-haiku-4-5", limit + 1, 413, "messages.0.content.1.source.data"},
		{"messages, far over", "messages", "openai/gpt-4o-mini", 4 * limit, 413, "messages.0.content.1.source.data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			provider, _, _ := strings.Cut(tc.model, "/")
			before := 0
			for _, f := range fx.fakes {
				before += len(f.Calls())
			}
			data := image(tc.size)
			if tc.route == "chat" {
				rec := do(fx.h, "POST", "/v1/chat/completions", chatBody(tc.model, data), tok)
				if rec.Code != tc.status {
					t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
				}
				if tc.status == 413 {
					e := openAIErr(t, rec, rec.Body.Bytes())
					param := ""
					if e.Param != nil {
						param = *e.Param
					}
					if e.Type != "invalid_request_error" || code(e) != "image_too_large" || param != tc.param ||
						!strings.Contains(e.Message, fmt.Sprint(limit)) {
						t.Errorf("error %s, want image_too_large naming %s", rec.Body, tc.param)
					}
				} else if c := decodeJSON[gateway.ChatCompletion](t, rec.Body.Bytes()); c.Object != "chat.completion" || len(c.Choices) != 1 {
					t.Errorf("answer %s", rec.Body)
				}
			} else {
				rec := messagesReq(fx.h, messagesBody(tc.model, data), key.Key)
				if rec.Code != tc.status {
					t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
				}
				if tc.status == 413 {
					e := decodeJSON[gateway.AnthropicErrorBody](t, rec.Body.Bytes())
					if e.Type != "error" || e.Error.Type != "request_too_large" || !strings.Contains(e.Error.Message, "'"+tc.param+"'") ||
						strings.Contains(rec.Body.String(), "source.url") || strings.Contains(rec.Body.String(), `"param"`) {
						t.Errorf("error %s, want Anthropic's request_too_large naming %s", rec.Body, tc.param)
					}
				} else if m := decodeJSON[gateway.Message](t, rec.Body.Bytes()); m.Type != "message" || len(m.Content) == 0 {
					t.Errorf("answer %s", rec.Body)
				}
			}
			after := 0
			for _, f := range fx.fakes {
				after += len(f.Calls())
			}
			if tc.status != 200 {
				if after != before {
					t.Errorf("a refused image reached a provider")
				}
				return
			}
			if after != before+1 {
				t.Fatalf("%d provider calls, want 1", after-before)
			}
			got := fx.fakes[provider].Last().Body["messages"]
			if diff := cmp.Diff(sent[provider](data), got); diff != "" {
				t.Errorf("%s received (-want +got):\n%s", provider, diff)
			}
		})
	}
}

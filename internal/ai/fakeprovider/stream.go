package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// StreamOptions shape a streamed answer (see Stream).
type StreamOptions struct {
	Pieces     []string // the text, piece by piece (default "Hello", " from", " the", " fake": OK's text)
	Prompt     int      // prompt tokens (default 11, as OK)
	Completion int      // completion tokens (default 7, as OK)
	// Gap is the wait before every piece after the first; GapAfterFirst, when set, replaces it
	// before the second piece only.
	Gap, GapAfterFirst time.Duration
	// FailAfter, when positive, fails the stream after that many pieces, as the provider does:
	// OpenAI a data line with an error object, Anthropic an error event (overloaded_error),
	// Gemini by cutting the connection.
	FailAfter int
	// Sent, when set, is called after piece i (from 0) was flushed.
	Sent func(i int, at time.Time)
	// Done, when set, is called when the answer ends: left is true when the client went away
	// before the end.
	Done func(left bool, at time.Time)
}

// Stream answers a streamed request in the server's own format, each event flushed as it is
// written:
//   - OpenAI: chat.completion.chunk data lines (a role chunk, one per piece, a finish_reason
//     chunk, the usage chunk when stream_options.include_usage is set), then data: [DONE];
//   - Anthropic: message_start (input tokens), content_block_start, ping, a
//     content_block_delta per piece, content_block_stop, message_delta (output tokens),
//     message_stop;
//   - Gemini: one GenerateContentResponse per piece with the usage so far, CRLF-separated,
//     finishReason STOP on the last.
//
// The usage and text are those of OK for the same pieces, so a streamed call can be compared
// with a non-streamed one.
func Stream(o StreamOptions) Responder {
	if len(o.Pieces) == 0 {
		o.Pieces = []string{"Hello", " from", " the", " fake"}
	}
	if o.Prompt == 0 {
		o.Prompt = 11
	}
	if o.Completion == 0 {
		o.Completion = 7
	}
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		left := false
		send := func(event string, v any) bool {
			data, _ := json.Marshal(v)
			if s, ok := v.(string); ok {
				data = []byte(s)
			}
			sep := "\n\n"
			if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/messages" {
				sep = "\r\n\r\n"
			}
			head := ""
			if event != "" {
				head = "event: " + event + "\n"
			}
			if _, err := fmt.Fprintf(w, "%sdata: %s%s", head, data, sep); err != nil {
				left = true
				return false
			}
			if rc.Flush() != nil {
				left = true
				return false
			}
			return true
		}
		wait := func(d time.Duration) bool {
			if d <= 0 {
				return r.Context().Err() == nil
			}
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return true
			case <-r.Context().Done():
				left = true
				return false
			}
		}
		defer func() {
			if o.Done != nil {
				o.Done(left || r.Context().Err() != nil, time.Now())
			}
		}()
		f := formats[r.URL.Path]
		if f == nil {
			f = geminiFormat
		}
		p := f(c, o)
		for _, e := range p.head {
			if !send(e.event, e.data) {
				return
			}
		}
		for i, piece := range o.Pieces {
			if i > 0 {
				gap := o.Gap
				if i == 1 && o.GapAfterFirst > 0 {
					gap = o.GapAfterFirst
				}
				if !wait(gap) {
					return
				}
			}
			if o.FailAfter > 0 && i == o.FailAfter {
				if p.fail == nil {
					panic(http.ErrAbortHandler) // cut the connection mid-body
				}
				send(p.fail.event, p.fail.data)
				return
			}
			e := p.piece(i, piece)
			if !send(e.event, e.data) {
				return
			}
			if o.Sent != nil {
				o.Sent(i, time.Now())
			}
		}
		for _, e := range p.tail {
			if !send(e.event, e.data) {
				return
			}
		}
	}
}

type sseEvent struct {
	event string
	data  any
}

// streamPlan is one provider's stream: the events before the pieces, each piece's event,
// the events after them, and the mid-stream failure (nil: cut the connection).
type streamPlan struct {
	head  []sseEvent
	piece func(i int, text string) sseEvent
	tail  []sseEvent
	fail  *sseEvent
}

var formats = map[string]func(Call, StreamOptions) streamPlan{
	"/v1/chat/completions": openAIFormat,
	"/v1/messages":         anthropicFormat,
}

func openAIFormat(c Call, o StreamOptions) streamPlan {
	model := c.Model() + "-2024-07-18"
	opts, _ := c.Body["stream_options"].(map[string]any)
	withUsage := opts["include_usage"] == true
	chunk := func(choices []any, usage any) map[string]any {
		m := map[string]any{"id": "chatcmpl-fake123", "object": "chat.completion.chunk", "created": 1763800000,
			"model": model, "system_fingerprint": nil, "choices": choices}
		if withUsage {
			m["usage"] = usage
		}
		return m
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	}
	p := streamPlan{
		head: []sseEvent{{data: chunk(choice(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil), nil)}},
		piece: func(_ int, text string) sseEvent {
			return sseEvent{data: chunk(choice(map[string]any{"content": text}, nil), nil)}
		},
		tail: []sseEvent{{data: chunk(choice(map[string]any{}, "stop"), nil)}},
		fail: &sseEvent{data: map[string]any{"error": map[string]any{"message": "fake server_error mid-stream",
			"type": "server_error", "param": nil, "code": nil}}},
	}
	if withUsage {
		p.tail = append(p.tail, sseEvent{data: chunk([]any{}, map[string]any{"prompt_tokens": o.Prompt,
			"completion_tokens": o.Completion, "total_tokens": o.Prompt + o.Completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": 0, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0}})})
	}
	p.tail = append(p.tail, sseEvent{data: "[DONE]"})
	return p
}

func anthropicFormat(c Call, o StreamOptions) streamPlan {
	return streamPlan{
		head: []sseEvent{
			{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
				"id": "msg_fake123", "type": "message", "role": "assistant", "model": c.Model(), "content": []any{},
				"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": o.Prompt,
					"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}}},
			{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}}},
			{"ping", map[string]any{"type": "ping"}},
		},
		piece: func(_ int, text string) sseEvent {
			return sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": text}}}
		},
		tail: []sseEvent{
			{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
			{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn",
				"stop_sequence": nil}, "usage": map[string]any{"output_tokens": o.Completion}}},
			{"message_stop", map[string]any{"type": "message_stop"}},
		},
		fail: &sseEvent{"error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error",
			"message": "Overloaded"}}},
	}
}

func geminiFormat(c Call, o StreamOptions) streamPlan {
	return streamPlan{
		piece: func(i int, text string) sseEvent {
			cand := map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": text}}, "role": "model"}, "index": 0}
			so := o.Completion * (i + 1) / len(o.Pieces)
			if i == len(o.Pieces)-1 {
				cand["finishReason"] = "STOP"
			}
			return sseEvent{data: map[string]any{"candidates": []any{cand},
				"usageMetadata": map[string]any{"promptTokenCount": o.Prompt, "candidatesTokenCount": so,
					"totalTokenCount": o.Prompt + so},
				"modelVersion": c.Model(), "responseId": "resp-fake123"}}
		},
	}
}

package gateway

import (
	"context"
	"strings"

	"github.com/acme/app/internal/ai"
)

// ResponseStream streams the answer of one Responses request as OpenAI's events: created
// and in_progress with the first piece (so that a refusal before it, a spent budget, is an
// ordinary error answer), a message item with an output_text part (a refusal part for a
// refusal) for the text, a function_call item per call with its arguments' deltas, then
// completed or incomplete with the whole Response. Each event is numbered from 0.
type ResponseStream struct {
	s    *Service
	req  *Request
	emit func(*ResponseEvent) error
	seq  int
	resp *Response // the Response so far; nil before the first event
	ids  itemIDs

	msg   int    // the open message item's output index (-1: none)
	msgs  int    // the message items opened so far
	part  string // the open part's type: output_text, refusal ("" none)
	calls map[int]int
	open  []int // the output indexes of the function calls not yet done, in order
}

// NewResponseStream returns the stream of req; emit receives each event as it is ready.
func (s *Service) NewResponseStream(req *Request, emit func(*ResponseEvent) error) *ResponseStream {
	return &ResponseStream{s: s, req: req, emit: emit, ids: itemIDs(req.Input.RequestID), msg: -1, calls: map[int]int{}}
}

// Run calls the provider and streams its answer. An error before emit was first called
// means nothing was sent (answer it as an error); after, answer it with Fail. Errors are
// CompleteResponse's.
func (st *ResponseStream) Run(ctx context.Context, userID string) error {
	c, err := st.s.ai.Stream(ctx, userID, st.req.Provider, st.req.Input, st.delta)
	if err != nil {
		return st.s.responsesParam(st.req, err)
	}
	if err := st.start(c.Model); err != nil {
		return err
	}
	r := st.resp
	r.Model = st.s.answerModel(st.req, c.Model)
	status := st.s.finishResponse(r, c)
	if err := st.closeMessage(status); err != nil {
		return err
	}
	for k, out := range st.open {
		if err := st.closeCall(out, status, finalArguments(c, k, st.resp.Output[out])); err != nil {
			return err
		}
	}
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	return st.send(&ResponseEvent{Type: typ, Response: r})
}

// Fail ends a stream that started with OpenAI's error event, then response.failed with the
// Response's error set: e is the error object of the failure, as its answer would carry it.
func (st *ResponseStream) Fail(e ErrorObject) error {
	if st.resp == nil {
		return nil
	}
	code := e.Type
	if e.Code != nil {
		code = *e.Code
	}
	if err := st.send(&ResponseEvent{Type: "error", Code: &code, Message: e.Message, Param: e.Param}); err != nil {
		return err
	}
	st.resp.Status, st.resp.Error = "failed", &ResponseError{Code: code, Message: e.Message}
	return st.send(&ResponseEvent{Type: "response.failed", Response: st.resp})
}

// send numbers ev and emits it.
func (st *ResponseStream) send(ev *ResponseEvent) error {
	ev.SequenceNumber = st.seq
	st.seq++
	return st.emit(ev)
}

// start sends response.created and response.in_progress, naming the model the provider
// reported (reported), once.
func (st *ResponseStream) start(reported string) error {
	if st.resp != nil {
		return nil
	}
	st.resp = st.s.newResponse(st.req, st.req.Input.RequestID, st.s.answerModel(st.req, reported))
	if err := st.send(&ResponseEvent{Type: "response.created", Response: st.resp}); err != nil {
		return err
	}
	return st.send(&ResponseEvent{Type: "response.in_progress", Response: st.resp})
}

func (st *ResponseStream) delta(d ai.Delta) error {
	if err := st.start(d.Model); err != nil {
		return err
	}
	if d.Text != "" {
		if err := st.text("output_text", d.Text); err != nil {
			return err
		}
	}
	if d.Refusal != "" {
		if err := st.text("refusal", d.Refusal); err != nil {
			return err
		}
	}
	if tc := d.ToolCall; tc != nil {
		return st.call(tc)
	}
	return nil
}

// text adds a piece of text (kind output_text) or of a refusal (kind refusal) to the open
// message, opening the message and the part as needed.
func (st *ResponseStream) text(kind, piece string) error {
	r := st.resp
	if st.msg < 0 {
		st.msg = len(r.Output)
		r.Output = append(r.Output, OutputItem{ID: st.ids.message(st.msgs), Type: "message", Status: "in_progress", Role: "assistant"})
		st.msgs++
		item := r.Output[st.msg]
		if err := st.send(&ResponseEvent{Type: "response.output_item.added", OutputIndex: ptrTo(st.msg), Item: &item}); err != nil {
			return err
		}
	}
	item := &r.Output[st.msg]
	if st.part != kind {
		if err := st.closePart(); err != nil {
			return err
		}
		st.part = kind
		item.Content = append(item.Content, ContentPart{Type: kind})
		part := item.Content[len(item.Content)-1]
		if err := st.send(&ResponseEvent{Type: "response.content_part.added", ItemID: item.ID, OutputIndex: ptrTo(st.msg),
			ContentIndex: ptrTo(len(item.Content) - 1), Part: &part}); err != nil {
			return err
		}
	}
	ci := len(item.Content) - 1
	typ := "response.output_text.delta"
	if kind == "refusal" {
		item.Content[ci].Refusal += piece
		typ = "response.refusal.delta"
	} else {
		item.Content[ci].Text += piece
	}
	return st.send(&ResponseEvent{Type: typ, ItemID: item.ID, OutputIndex: ptrTo(st.msg), ContentIndex: ptrTo(ci), Delta: &piece})
}

// closePart sends the open part's done events.
func (st *ResponseStream) closePart() error {
	if st.part == "" {
		return nil
	}
	item := &st.resp.Output[st.msg]
	ci := len(item.Content) - 1
	part := item.Content[ci]
	done := &ResponseEvent{Type: "response.output_text.done", ItemID: item.ID, OutputIndex: ptrTo(st.msg), ContentIndex: ptrTo(ci), Text: &part.Text}
	if st.part == "refusal" {
		done = &ResponseEvent{Type: "response.refusal.done", ItemID: item.ID, OutputIndex: ptrTo(st.msg), ContentIndex: ptrTo(ci), Refusal: &part.Refusal}
	}
	st.part = ""
	if err := st.send(done); err != nil {
		return err
	}
	return st.send(&ResponseEvent{Type: "response.content_part.done", ItemID: item.ID, OutputIndex: ptrTo(st.msg), ContentIndex: ptrTo(ci), Part: &part})
}

// closeMessage closes the open message item with status.
func (st *ResponseStream) closeMessage(status string) error {
	if st.msg < 0 {
		return nil
	}
	if err := st.closePart(); err != nil {
		return err
	}
	out := st.msg
	st.msg = -1
	st.resp.Output[out].Status = status
	item := st.resp.Output[out]
	return st.send(&ResponseEvent{Type: "response.output_item.done", OutputIndex: ptrTo(out), Item: &item})
}

// call adds a piece of a function call: its first opens its item (closing the message
// before it), the others are deltas of its arguments.
func (st *ResponseStream) call(tc *ai.ToolCallDelta) error {
	r := st.resp
	out, ok := st.calls[tc.Index]
	if !ok {
		if err := st.closeMessage("completed"); err != nil {
			return err
		}
		out = len(r.Output)
		st.calls[tc.Index], st.open = out, append(st.open, out)
		r.Output = append(r.Output, OutputItem{ID: st.ids.call(len(st.calls) - 1), Type: "function_call", Status: "in_progress", CallID: tc.ID, Name: tc.Name})
		item := r.Output[out]
		if err := st.send(&ResponseEvent{Type: "response.output_item.added", OutputIndex: ptrTo(out), Item: &item}); err != nil {
			return err
		}
	}
	if tc.Arguments == "" {
		return nil
	}
	item := &r.Output[out]
	if item.Status != "in_progress" {
		return nil // a fragment after the call was done (none is expected)
	}
	item.Arguments += tc.Arguments
	piece := tc.Arguments
	return st.send(&ResponseEvent{Type: "response.function_call_arguments.delta", ItemID: item.ID, OutputIndex: ptrTo(out), Delta: &piece})
}

// finalArguments are the arguments of the k-th call the stream opened, it, as the provider's
// whole answer has them (by call id, else by position): "{}" for an Anthropic tool_use that
// streamed no fragment, as the answer without streaming has it.
func finalArguments(c *ai.Completion, k int, it OutputItem) string {
	for _, tc := range c.ToolCalls {
		if tc.ID == it.CallID {
			return tc.Arguments
		}
	}
	if k < len(c.ToolCalls) && c.ToolCalls[k].Name == it.Name {
		return c.ToolCalls[k].Arguments
	}
	return it.Arguments
}

// closeCall sends a function call's done events, its item with status; final are its
// arguments in the provider's answer: what they add to the fragments streamed is sent as a
// last delta first, so that the deltas add up to the done event's arguments.
func (st *ResponseStream) closeCall(out int, status, final string) error {
	item := &st.resp.Output[out]
	if rest, ok := strings.CutPrefix(final, item.Arguments); ok && rest != "" {
		item.Arguments = final
		if err := st.send(&ResponseEvent{Type: "response.function_call_arguments.delta", ItemID: item.ID, OutputIndex: ptrTo(out), Delta: &rest}); err != nil {
			return err
		}
	}
	args := item.Arguments
	if err := st.send(&ResponseEvent{Type: "response.function_call_arguments.done", ItemID: item.ID, OutputIndex: ptrTo(out),
		Name: item.Name, Arguments: &args}); err != nil {
		return err
	}
	item.Status = status
	done := *item
	return st.send(&ResponseEvent{Type: "response.output_item.done", OutputIndex: ptrTo(out), Item: &done})
}

func ptrTo[T any](v T) *T { return &v }

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/validate"
)

// OpenAI's Responses API (POST /v1/responses) on top of the AI service, stateless: the
// request's instructions and input items are read into the service's conversation, routed
// by its model like a chat completion, and the answer is written as OpenAI's Response or its
// event stream, whichever provider answered. Nothing is stored: previous_response_id is
// refused, and the client sends the whole conversation each time.

// responsesAccepted are the parameters of a Responses request the gateway honours; metadata,
// user and store are read and not forwarded (nothing is stored, whatever store says).
var responsesAccepted = map[string]bool{
	"model": true, "input": true, "instructions": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "temperature": true, "top_p": true, "max_output_tokens": true,
	"text": true, "stream": true, "metadata": true, "user": true, "store": true,
}

// ResponsesEcho are the settings of a Responses request that its Response echoes, and where
// each message of its conversation came from.
type ResponsesEcho struct {
	instructions *string
	maxOutput    *int
	parallel     bool
	temperature  *float64
	topP         *float64
	format       json.RawMessage
	toolChoice   json.RawMessage
	tools        []json.RawMessage
	user         *string
	metadata     json.RawMessage
	// at is, for each message of the conversation, the parameter it came from (input[3],
	// instructions, input), to name it in the AI service's refusals; calls is, for each
	// message, the input item of each of its tool calls (consecutive function_call items,
	// and a message item before them, are one assistant message).
	at    []string
	calls [][]string
}

// ParseResponses reads a Responses request. Anything the gateway cannot honour is an Invalid
// *apperr.Error naming the parameter (previous_response_id included: the gateway keeps no
// conversation state); nothing is dropped silently.
func (s *Service) ParseResponses(body []byte) (*Request, error) {
	var fields chatRequest
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, invalid("", "", "We could not parse the JSON body of your request: it must be one JSON object.")
	}
	if raw := fields["previous_response_id"]; !validate.IsNull(raw) {
		return nil, unsupported("previous_response_id", "is not supported: this gateway keeps no conversation state (nothing is stored); send the whole conversation in 'input'.")
	}
	for name, raw := range fields {
		if !responsesAccepted[name] && !validate.IsNull(raw) {
			return nil, unsupported(name, "is not supported by this gateway.")
		}
	}
	req := &Request{Echo: &ResponsesEcho{parallel: true, toolChoice: json.RawMessage(`"auto"`),
		format: json.RawMessage(`{"type":"text"}`), metadata: json.RawMessage(`{}`), tools: []json.RawMessage{}}}
	if err := s.route(fields, req); err != nil {
		return nil, err
	}
	in, echo := &req.Input, req.Echo
	in.SystemAllowed, in.ProviderDefaults = true, true
	var err error
	if raw := fields["instructions"]; !validate.IsNull(raw) {
		var text string
		if json.Unmarshal(raw, &text) != nil {
			return nil, invalid("instructions", "invalid_type", "Invalid type for 'instructions': expected a string.")
		}
		if text != "" {
			in.Messages, echo.at = append(in.Messages, ai.Message{Role: "system", Content: text}), append(echo.at, "instructions")
			echo.calls = append(echo.calls, nil)
		}
		echo.instructions = &text
	}
	if err := s.responsesInput(fields["input"], req); err != nil {
		return nil, err
	}
	if err := responsesTools(fields, req); err != nil {
		return nil, err
	}
	if raw := fields["text"]; !validate.IsNull(raw) {
		if err := responsesText(raw, req); err != nil {
			return nil, err
		}
	}
	if in.Temperature, err = number(fields, "temperature", 0, 2); err != nil {
		return nil, err
	}
	if in.TopP, err = number(fields, "top_p", 0, 1); err != nil {
		return nil, err
	}
	echo.temperature, echo.topP = in.Temperature, in.TopP
	if raw := fields["max_output_tokens"]; !validate.IsNull(raw) {
		if in.MaxTokens, err = maxTokens(chatRequest{"max_tokens": raw}); err != nil {
			e := err.(*apperr.Error)
			e.Param, e.Messages = "max_output_tokens", []string{strings.ReplaceAll(e.Messages[0], "max_tokens", "max_output_tokens")}
			return nil, e
		}
		echo.maxOutput = in.MaxTokens
	}
	if raw := fields["stream"]; !validate.IsNull(raw) && json.Unmarshal(raw, &req.Stream) != nil {
		return nil, invalid("stream", "invalid_type", "Invalid type for 'stream': expected a boolean.")
	}
	if raw := fields["store"]; !validate.IsNull(raw) {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, invalid("store", "invalid_type", "Invalid type for 'store': expected a boolean.")
		}
	}
	if raw := fields["user"]; !validate.IsNull(raw) {
		var u string
		if json.Unmarshal(raw, &u) != nil {
			return nil, invalid("user", "invalid_type", "Invalid type for 'user': expected a string.")
		}
		echo.user = &u
	}
	if raw := fields["metadata"]; !validate.IsNull(raw) {
		var m map[string]string
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return nil, invalid("metadata", "invalid_type", "Invalid type for 'metadata': expected an object of strings.")
		}
		echo.metadata = raw
	}
	return req, nil
}

// responsesInput reads `input`: a string (one user message), or a list of items: messages
// (role user, assistant, system or developer; content a string or parts input_text,
// input_image, and in an assistant's output_text and refusal), function_call and
// function_call_output items.
func (s *Service) responsesInput(raw json.RawMessage, req *Request) error {
	in, echo := &req.Input, req.Echo
	if validate.IsNull(raw) {
		return invalid("input", "", "Missing required parameter: 'input'.")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		in.Messages, echo.at = append(in.Messages, ai.Message{Role: "user", Content: text}), append(echo.at, "input")
		echo.calls = append(echo.calls, nil)
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return invalid("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
	}
	if len(items) == 0 {
		return invalid("input", "empty_array", "Invalid 'input': empty array. Expected an array with minimum length 1.")
	}
	for i, item := range items {
		at := fmt.Sprintf("input[%d]", i)
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) != nil {
			return invalid(at, "invalid_type", "Invalid type for '%s': expected an input item object.", at)
		}
		var v struct {
			Type, Role, CallID, Name, Arguments *string
			Content, Output                     json.RawMessage
		}
		v.Content, v.Output = fields["content"], fields["output"]
		for _, f := range []struct {
			name string
			dst  **string
		}{{"type", &v.Type}, {"role", &v.Role}, {"call_id", &v.CallID}, {"name", &v.Name}, {"arguments", &v.Arguments}} {
			var err error
			if *f.dst, err = optString(at, f.name, fields[f.name]); err != nil {
				return err
			}
		}
		typ := "message"
		if v.Type != nil {
			typ = *v.Type
		}
		n := len(in.Messages)
		switch typ {
		case "message":
			if err := onlyFields(at, item, "type", "role", "content", "id", "status"); err != nil {
				return err
			}
			m, err := s.responsesMessage(at, v.Role, v.Content)
			if err != nil {
				return err
			}
			in.Messages = append(in.Messages, m)
		case "function_call":
			if err := onlyFields(at, item, "type", "call_id", "name", "arguments", "id", "status"); err != nil {
				return err
			}
			switch {
			case v.CallID == nil || *v.CallID == "":
				return invalid(at+".call_id", "", "Missing required parameter: '%s.call_id'.", at)
			case v.Name == nil || *v.Name == "":
				return invalid(at+".name", "", "Missing required parameter: '%s.name'.", at)
			case v.Arguments == nil:
				return invalid(at+".arguments", "", "Missing required parameter: '%s.arguments'.", at)
			}
			call := ai.ToolCall{ID: *v.CallID, Name: *v.Name, Arguments: *v.Arguments}
			// Consecutive calls (and the text before them) are one assistant message, as the
			// providers take them.
			if n > 0 && in.Messages[n-1].Role == "assistant" {
				in.Messages[n-1].ToolCalls = append(in.Messages[n-1].ToolCalls, call)
				echo.calls[n-1] = append(echo.calls[n-1], at)
				continue
			}
			in.Messages = append(in.Messages, ai.Message{Role: "assistant", ToolCalls: []ai.ToolCall{call}})
			echo.calls = append(echo.calls, []string{at})
			echo.at = append(echo.at, at)
			continue
		case "function_call_output":
			if err := onlyFields(at, item, "type", "call_id", "output", "id", "status"); err != nil {
				return err
			}
			if v.CallID == nil || *v.CallID == "" {
				return invalid(at+".call_id", "", "Missing required parameter: '%s.call_id'.", at)
			}
			out, err := functionOutput(at+".output", v.Output)
			if err != nil {
				return err
			}
			in.Messages = append(in.Messages, ai.Message{Role: "tool", ToolCallID: *v.CallID, Content: out})
		default:
			return unsupported(at+".type", fmt.Sprintf("'%s' items are not supported by this gateway (message, function_call and function_call_output only).", typ))
		}
		echo.at, echo.calls = append(echo.at, at), append(echo.calls, nil)
	}
	return nil
}

// optString reads the field name of the object at: nil when it is absent or null, else a
// string (anything else is an invalid_type naming the field).
func optString(at, name string, raw json.RawMessage) (*string, error) {
	if validate.IsNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, invalid(at+"."+name, "invalid_type", "Invalid type for '%s.%s': expected a string.", at, name)
	}
	return &s, nil
}

// responsesMessage reads a message item's role and content.
func (s *Service) responsesMessage(at string, role *string, content json.RawMessage) (ai.Message, error) {
	const roles = "user, assistant, system, developer"
	if role == nil {
		return ai.Message{}, invalid(at+".role", "", "Missing required parameter: '%s.role'.", at)
	}
	m := ai.Message{Role: *role}
	switch m.Role {
	case "developer":
		m.Role = "system"
	case "user", "assistant", "system":
	default:
		return ai.Message{}, invalid(at+".role", "invalid_value", "Invalid value for '%s.role': expected one of %s.", at, roles)
	}
	if validate.IsNull(content) {
		return ai.Message{}, invalid(at+".content", "", "Missing required parameter: '%s.content'.", at)
	}
	var text string
	if json.Unmarshal(content, &text) == nil {
		m.Content = text
		return m, nil
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(content, &parts) != nil {
		return ai.Message{}, invalid(at+".content", "invalid_type", "Invalid type for '%s.content': expected a string or an array of content parts.", at)
	}
	hasImage := false
	out := make([]ai.Part, len(parts))
	for j, p := range parts {
		pat := fmt.Sprintf("%s.content[%d]", at, j)
		var typ string
		if json.Unmarshal(p["type"], &typ) != nil {
			return ai.Message{}, invalid(pat+".type", "invalid_type", "Invalid type for '%s.type': expected a string.", pat)
		}
		raw, _ := json.Marshal(p)
		switch {
		case typ == "input_text" && m.Role != "assistant", typ == "output_text" && m.Role == "assistant":
			if err := onlyFields(pat, raw, "type", "text", "annotations", "logprobs"); err != nil {
				return ai.Message{}, err
			}
			if json.Unmarshal(p["text"], &out[j].Text) != nil {
				return ai.Message{}, invalid(pat+".text", "invalid_type", "Invalid type for '%s.text': expected a string.", pat)
			}
		case typ == "refusal" && m.Role == "assistant":
			if err := onlyFields(pat, raw, "type", "refusal"); err != nil {
				return ai.Message{}, err
			}
			if json.Unmarshal(p["refusal"], &out[j].Text) != nil {
				return ai.Message{}, invalid(pat+".refusal", "invalid_type", "Invalid type for '%s.refusal': expected a string.", pat)
			}
		case typ == "input_image" && m.Role == "user":
			if err := onlyFields(pat, raw, "type", "image_url", "detail"); err != nil {
				return ai.Message{}, err
			}
			if raw := p["detail"]; !validate.IsNull(raw) {
				var detail string
				if json.Unmarshal(raw, &detail) != nil {
					return ai.Message{}, invalid(pat+".detail", "invalid_type", "Invalid type for '%s.detail': expected a string (low, high or auto).", pat)
				}
			}
			var url string
			if json.Unmarshal(p["image_url"], &url) != nil || url == "" {
				return ai.Message{}, invalid(pat+".image_url", "", "Missing required parameter: '%s.image_url' (a data: or http(s) URL; file_id is not supported by this gateway).", pat)
			}
			chat, _ := json.Marshal(map[string]json.RawMessage{"url": p["image_url"], "detail": p["detail"]})
			im, err := imagePart(pat, chat, s.maxImage)
			if err != nil {
				return ai.Message{}, renameImageParam(err, pat)
			}
			out[j].Image, hasImage = im, true
		default:
			return ai.Message{}, unsupported(pat+".type", fmt.Sprintf("'%s' parts are not supported in a %s message by this gateway.", typ, m.Role))
		}
	}
	if hasImage {
		m.Parts = out
		return m, nil
	}
	var b strings.Builder
	for _, p := range out {
		b.WriteString(p.Text)
	}
	m.Content = b.String()
	return m, nil
}

// renameImageParam names an image's refusal by the Responses part's image_url (pat.url is
// chat's name for it).
func renameImageParam(err error, pat string) error {
	if e, ok := err.(*apperr.Error); ok && strings.HasPrefix(e.Param, pat+".url") {
		out := *e
		out.Param = pat + ".image_url"
		out.Messages = []string{strings.ReplaceAll(e.Messages[0], pat+".url", pat+".image_url")}
		return &out
	}
	return err
}

// functionOutput reads a function_call_output's output: a string, or input_text parts joined.
func functionOutput(at string, raw json.RawMessage) (string, error) {
	if validate.IsNull(raw) {
		return "", invalid(at, "", "Missing required parameter: '%s'.", at)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", invalid(at, "invalid_type", "Invalid type for '%s': expected a string or an array of input_text parts.", at)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" || p.Text == nil {
			return "", unsupported(fmt.Sprintf("%s[%d].type", at, j), "only input_text parts are supported in a function call's output by this gateway.")
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// responsesTools reads `tools` (function tools {type, name, description, parameters,
// strict}), `tool_choice` and `parallel_tool_calls`.
func responsesTools(fields chatRequest, req *Request) error {
	in, echo := &req.Input, req.Echo
	if raw := fields["tools"]; !validate.IsNull(raw) {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return invalid("tools", "invalid_type", "Invalid type for 'tools': expected an array of {type: \"function\", name, description, parameters}.")
		}
		if len(items) > MaxTools {
			return invalid("tools", "array_above_max_length", "Invalid 'tools': at most %d tools.", MaxTools)
		}
		seen := map[string]bool{}
		for i, item := range items {
			at := fmt.Sprintf("tools[%d]", i)
			var fields map[string]json.RawMessage
			if json.Unmarshal(item, &fields) != nil {
				return invalid(at, "invalid_type", "Invalid type for '%s': expected a tool object.", at)
			}
			var t struct {
				Type, Name, Description *string
				Parameters              json.RawMessage
				Strict                  *bool
			}
			t.Parameters = fields["parameters"]
			for _, f := range []struct {
				name string
				dst  **string
			}{{"type", &t.Type}, {"name", &t.Name}, {"description", &t.Description}} {
				var err error
				if *f.dst, err = optString(at, f.name, fields[f.name]); err != nil {
					return err
				}
			}
			if raw := fields["strict"]; !validate.IsNull(raw) {
				var b bool
				if json.Unmarshal(raw, &b) != nil {
					return invalid(at+".strict", "invalid_type", "Invalid type for '%s.strict': expected a boolean.", at)
				}
				t.Strict = &b
			}
			switch {
			case t.Type == nil:
				return invalid(at+".type", "", "Missing required parameter: '%s.type'.", at)
			case *t.Type != "function":
				return unsupported(at+".type", fmt.Sprintf("is '%s', a tool type this gateway does not support (function tools only).", *t.Type))
			}
			if err := checkToolName(at, t.Name, seen); err != nil {
				return err
			}
			if !validate.IsNull(t.Parameters) && !isObject(t.Parameters) {
				return invalid(at+".parameters", "invalid_type", "Invalid type for '%s.parameters': expected a JSON Schema object.", at)
			}
			if err := onlyFields(at, item, "type", "name", "description", "parameters", "strict"); err != nil {
				return err
			}
			tool := ai.Tool{Name: *t.Name, Strict: t.Strict}
			if t.Description != nil {
				tool.Description = *t.Description
			}
			if !validate.IsNull(t.Parameters) {
				tool.Parameters = t.Parameters
			}
			in.Tools = append(in.Tools, tool)
		}
		echo.tools = items
	}
	if raw := fields["tool_choice"]; !validate.IsNull(raw) {
		if err := responsesToolChoice(raw, in); err != nil {
			return err
		}
		echo.toolChoice = raw
	}
	if raw := fields["parallel_tool_calls"]; !validate.IsNull(raw) {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return invalid("parallel_tool_calls", "invalid_type", "Invalid type for 'parallel_tool_calls': expected a boolean.")
		}
		echo.parallel = b
		if len(in.Tools) > 0 {
			in.ParallelToolCalls = &b
		}
	}
	return nil
}

// responsesToolChoice reads `tool_choice`: auto, none, required, or {type: "function", name}
// naming one of the tools.
func responsesToolChoice(raw json.RawMessage, in *ai.ChatInput) error {
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case ai.ToolAuto, ai.ToolNone, ai.ToolRequired:
			if mode == ai.ToolRequired && len(in.Tools) == 0 {
				return invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': 'required' needs at least one tool in 'tools'.")
			}
			if len(in.Tools) > 0 {
				in.ToolChoice = ai.ToolChoice{Mode: mode}
			}
			return nil
		}
		return invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': expected 'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}.")
	}
	var named struct {
		Type *string `json:"type"`
		Name string  `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type == nil {
		return invalid("tool_choice", "invalid_type", "Invalid type for 'tool_choice': expected 'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}.")
	}
	if *named.Type != "function" {
		return unsupported("tool_choice.type", fmt.Sprintf("'%s' is not supported by this gateway (function tools only).", *named.Type))
	}
	if err := onlyFields("tool_choice", raw, "type", "name"); err != nil {
		return err
	}
	for _, t := range in.Tools {
		if t.Name == named.Name {
			in.ToolChoice = ai.ToolChoice{Mode: ai.ToolNamed, Name: t.Name}
			return nil
		}
	}
	return invalid("tool_choice.name", "invalid_value", "Invalid value for 'tool_choice.name': no tool named '%s' is in 'tools'.", named.Name)
}

// responsesText reads `text`: {format: {type: text | json_object | json_schema (name,
// schema, description, strict)}}, the JSON output of chat's response_format.
func responsesText(raw json.RawMessage, req *Request) error {
	var text struct {
		Format json.RawMessage `json:"format"`
	}
	if json.Unmarshal(raw, &text) != nil {
		return invalid("text", "invalid_type", "Invalid type for 'text': expected {format: {type: ...}}.")
	}
	if err := onlyFields("text", raw, "format"); err != nil {
		return err
	}
	if validate.IsNull(text.Format) {
		return nil
	}
	var f struct {
		Type *string `json:"type"`
	}
	if json.Unmarshal(text.Format, &f) != nil || f.Type == nil {
		return invalid("text.format", "invalid_type", "Invalid type for 'text.format': expected {type: \"text\" | \"json_object\" | \"json_schema\"}.")
	}
	var chat json.RawMessage
	switch *f.Type {
	case "text", "json_object":
		if err := onlyFields("text.format", text.Format, "type"); err != nil {
			return err
		}
		chat = text.Format
	case "json_schema":
		if err := onlyFields("text.format", text.Format, "type", "name", "schema", "description", "strict"); err != nil {
			return err
		}
		var js map[string]json.RawMessage
		_ = json.Unmarshal(text.Format, &js)
		delete(js, "type")
		chat, _ = json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
	default:
		return invalid("text.format.type", "invalid_value", "Invalid value for 'text.format.type': expected 'text', 'json_object' or 'json_schema'.")
	}
	rf, err := responseFormat(chat)
	if err != nil {
		e := err.(*apperr.Error)
		out := *e
		out.Param = strings.Replace(strings.Replace(e.Param, "response_format.json_schema", "text.format", 1), "response_format", "text.format", 1)
		out.Messages = []string{strings.NewReplacer("response_format.json_schema", "text.format", "response_format", "text.format").Replace(e.Messages[0])}
		return &out
	}
	req.Input.ResponseFormat, req.Echo.format = rf, text.Format
	return nil
}

// CompleteResponse answers a non-streamed Responses request with the Response: completed, or
// incomplete when the provider stopped at the output cap or its content filter. Errors are
// the AI service's, the parameter they name as this request names it.
func (s *Service) CompleteResponse(ctx context.Context, userID string, req *Request) (*Response, error) {
	c, err := s.ai.Complete(ctx, userID, req.Provider, req.Input)
	if err != nil {
		return nil, s.responsesParam(req, err)
	}
	r := s.newResponse(req, c.RequestID, s.answerModel(req, c.Model))
	status := s.finishResponse(r, c)
	id := itemIDs(c.RequestID)
	if c.Text != "" || c.Refusal != "" || len(c.ToolCalls) == 0 {
		it := OutputItem{ID: id.message(0), Type: "message", Status: status, Role: "assistant"}
		if c.Text != "" || c.Refusal == "" {
			it.Content = append(it.Content, ContentPart{Type: "output_text", Text: c.Text})
		}
		if c.Refusal != "" {
			it.Content = append(it.Content, ContentPart{Type: "refusal", Refusal: c.Refusal})
		}
		r.Output = append(r.Output, it)
	}
	for i, tc := range c.ToolCalls {
		r.Output = append(r.Output, OutputItem{ID: id.call(i), Type: "function_call", Status: status, CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return r, nil
}

// newResponse is the Response of req, in progress, with nothing output yet.
func (s *Service) newResponse(req *Request, requestID, model string) *Response {
	e := req.Echo
	return &Response{ID: "resp_" + strings.ReplaceAll(requestID, "-", ""), Object: "response", CreatedAt: s.now().Unix(),
		Status: "in_progress", Instructions: e.instructions, MaxOutputTokens: e.maxOutput, Model: model, Output: []OutputItem{},
		ParallelToolCalls: e.parallel, Temperature: e.temperature, Text: ResponseText{Format: e.format}, ToolChoice: e.toolChoice,
		Tools: e.tools, TopP: e.topP, Truncation: "disabled", User: e.user, Metadata: e.metadata}
}

// finishResponse sets r's status (completed, or incomplete with its reason), completion
// time and usage from c, and returns the status its items take.
func (s *Service) finishResponse(r *Response, c *ai.Completion) string {
	r.Status = "completed"
	switch c.FinishReason {
	case "length":
		r.Status, r.IncompleteDetails = "incomplete", &IncompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &IncompleteDetails{Reason: "content_filter"}
	}
	if r.Status == "completed" {
		at := s.now().Unix()
		r.CompletedAt = &at
	}
	r.Usage = &ResponseUsage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens, TotalTokens: c.Usage.TotalTokens,
		InputTokensDetails: PromptDetail{CachedTokens: c.CachedTokens}, OutputTokensDetails: OutputDetail{ReasoningTokens: c.ReasoningTokens}}
	return r.Status
}

// itemIDs make the ids of a Response's output items from its request id: msg_…, fc_….
type itemIDs string

func (id itemIDs) message(n int) string {
	base := "msg_" + strings.ReplaceAll(string(id), "-", "")
	if n == 0 {
		return base
	}
	return fmt.Sprintf("%s_%d", base, n)
}

func (id itemIDs) call(n int) string {
	return fmt.Sprintf("fc_%s_%d", strings.ReplaceAll(string(id), "-", ""), n)
}

// responsesParam returns err with the parameter the AI service named in this request's
// terms: maxTokens is max_output_tokens, messages.N… the input item message N came from
// (a tool call's fields those of its function_call item, a tool result's those of its
// function_call_output item), also where the message quotes it.
func (s *Service) responsesParam(req *Request, err error) error {
	e, ok := err.(*apperr.Error)
	if !ok || e.Param == "" {
		return err
	}
	out := *e
	switch parts := strings.SplitN(e.Param, ".", 3); {
	case parts[0] == "maxTokens":
		out.Param = "max_output_tokens"
	case parts[0] == "messages" && len(parts) > 1:
		var n int
		out.Param = "input"
		if _, err := fmt.Sscan(parts[1], &n); err == nil && n >= 0 && n < len(req.Echo.at) {
			out.Param = req.Echo.at[n]
			if len(parts) == 3 && strings.HasPrefix(out.Param, "input[") {
				out.Param = inputParam(out.Param, req.Echo.calls[n], req.Input.Messages[n].Role, parts[2])
			}
		}
		out.Messages = quoting(e.Messages, e.Param, out.Param)
	case parts[0] == "messages":
		out.Param = "input"
		out.Messages = quoting(e.Messages, e.Param, out.Param)
	case parts[0] == "response_format":
		// text.format is chat's response_format, its json_schema's fields one level up.
		out.Param = "text.format" + strings.TrimPrefix(strings.TrimPrefix(e.Param, "response_format"), ".json_schema")
		out.Messages = quoting(e.Messages, e.Param, out.Param)
	case parts[0] == "tools" && len(parts) == 3 && strings.HasPrefix(parts[2], "function."):
		// A Responses tool is chat's tool without the function object around its fields.
		out.Param = paramName("tools." + parts[1] + "." + strings.TrimPrefix(parts[2], "function."))
		out.Messages = quoting(e.Messages, e.Param, out.Param)
	default:
		out.Param = paramName(e.Param)
	}
	return &out
}

// quoting returns msgs with the first one's mention of the parameter from naming it to,
// as its param does: "messages.1.tool_calls.1.function.arguments must be …" becomes
// "input[2].arguments must be …".
func quoting(msgs []string, from, to string) []string {
	if len(msgs) == 0 {
		return msgs
	}
	return append([]string{strings.Replace(msgs[0], from, to, 1)}, msgs[1:]...)
}

// inputParam names rest, a path inside a message of the AI service's conversation, by the
// input item it came from: at the message's item, calls the items of its tool calls.
func inputParam(at string, calls []string, role, rest string) string {
	field, sub, _ := strings.Cut(rest, ".")
	switch {
	case field == "tool_calls":
		idx, inCall, _ := strings.Cut(sub, ".")
		var j int
		if _, err := fmt.Sscan(idx, &j); err != nil || j < 0 || j >= len(calls) {
			return at
		}
		switch inCall {
		case "function.arguments":
			return calls[j] + ".arguments"
		case "function.name":
			return calls[j] + ".name"
		case "id":
			return calls[j] + ".call_id"
		}
		return calls[j]
	case field == "tool_call_id":
		return at + ".call_id"
	case field == "content" && role == "tool":
		return at + ".output"
	}
	return at + strings.TrimPrefix(paramName("x."+rest), "x")
}

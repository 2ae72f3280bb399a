package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/providers"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/validate"
)

// invalid is a refused parameter: Invalid (OpenAI's 400 invalid_request_error) naming param,
// with OpenAI's code ("" for none).
func invalid(param, code, format string, args ...any) *apperr.Error {
	return &apperr.Error{Kind: apperr.Invalid, Messages: []string{fmt.Sprintf(format, args...)}, Param: param, Code: code}
}

// unsupported is the 400 of a parameter the gateway cannot honour.
func unsupported(param, why string) *apperr.Error {
	return invalid(param, "unsupported_parameter", "Unsupported parameter: '%s' %s", param, why)
}

// onlyFields refuses, naming it, a field of the object raw at `at` (a message's part, a tool,
// a content block) other than names and not null: nothing a request asks for is dropped
// silently. A value that is not an object is left to the caller's own decoding.
func onlyFields(at string, raw json.RawMessage, names ...string) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if slices.Contains(names, name) || validate.IsNull(fields[name]) {
			continue
		}
		if name == "cache_control" {
			return unsupported(at+"."+name, "prompt caching marks are not supported by this gateway.")
		}
		return unsupported(at+"."+name, "is not supported by this gateway.")
	}
	return nil
}

// Request is a parsed chat-completions request, ready for the AI service.
type Request struct {
	Provider     string // openai, anthropic, gemini
	Model        string // as the client named it, answered back in `model`
	Input        ai.ChatInput
	Stream       bool
	IncludeUsage bool // stream_options.include_usage

	// Echo holds a Responses request's settings, which its Response echoes (nil for the
	// other dialects).
	Echo *ResponsesEcho
}

// MaxStop is the most stop sequences OpenAI accepts.
const MaxStop = 4

// chatRequest is the body of POST /v1/chat/completions, each field kept raw so that a value of
// the wrong type is answered with the parameter's name.
type chatRequest map[string]json.RawMessage

// accepted are the parameters the gateway honours.
var accepted = map[string]bool{
	"model": true, "messages": true, "temperature": true, "top_p": true, "max_tokens": true,
	"max_completion_tokens": true, "stop": true, "stream": true, "stream_options": true, "user": true,
	"tools": true, "tool_choice": true, "parallel_tool_calls": true, "response_format": true,
}

// neutral are parameters accepted only at the value that changes nothing (OpenAI's default).
var neutral = map[string]string{
	"n": "1", "presence_penalty": "0", "frequency_penalty": "0", "logprobs": "false",
	"store": "false", // chat completions are not stored unless asked; some clients say so
}

// Parse reads a chat-completions body. Anything the gateway cannot honour is an Invalid
// *apperr.Error naming the parameter (its Param, in OpenAI's notation) with OpenAI's code;
// nothing is dropped silently.
func (s *Service) Parse(body []byte) (*Request, error) {
	var fields chatRequest
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, invalid("", "", "We could not parse the JSON body of your request: it must be one JSON object.")
	}
	for name, raw := range fields {
		if accepted[name] || validate.IsNull(raw) {
			continue
		}
		if def, ok := neutral[name]; ok {
			if compact(raw) == def {
				continue
			}
			return nil, unsupported(name, fmt.Sprintf("is only supported at its default (%s) by this gateway.", def))
		}
		return nil, unsupported(name, "is not supported by this gateway.")
	}
	req := &Request{}
	if err := s.route(fields, req); err != nil {
		return nil, err
	}
	msgs, err := parseMessages(fields["messages"], s.maxImage)
	if err != nil {
		return nil, err
	}
	req.Input.Messages, req.Input.SystemAllowed, req.Input.ProviderDefaults = msgs, true, true
	if err := parseTools(fields, &req.Input); err != nil {
		return nil, err
	}
	if req.Input.ResponseFormat, err = responseFormat(fields["response_format"]); err != nil {
		return nil, err
	}
	if req.Input.Temperature, err = number(fields, "temperature", 0, 2); err != nil {
		return nil, err
	}
	if req.Input.TopP, err = number(fields, "top_p", 0, 1); err != nil {
		return nil, err
	}
	if req.Input.MaxTokens, err = maxTokens(fields); err != nil {
		return nil, err
	}
	if req.Input.Stop, err = stops(fields["stop"]); err != nil {
		return nil, err
	}
	if raw := fields["user"]; !validate.IsNull(raw) {
		var u string
		if json.Unmarshal(raw, &u) != nil {
			return nil, invalid("user", "invalid_type", "Invalid type for 'user': expected a string.")
		}
	}
	if raw := fields["stream"]; !validate.IsNull(raw) {
		if json.Unmarshal(raw, &req.Stream) != nil {
			return nil, invalid("stream", "invalid_type", "Invalid type for 'stream': expected a boolean.")
		}
	}
	if raw := fields["stream_options"]; !validate.IsNull(raw) {
		if !req.Stream {
			return nil, invalid("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		var opts map[string]json.RawMessage
		if json.Unmarshal(raw, &opts) != nil || opts == nil {
			return nil, invalid("stream_options", "invalid_type", "Invalid type for 'stream_options': expected an object.")
		}
		for name, v := range opts {
			switch {
			case name == "include_usage":
				if !validate.IsNull(v) && json.Unmarshal(v, &req.IncludeUsage) != nil {
					return nil, invalid("stream_options.include_usage", "invalid_type", "Invalid type for 'stream_options.include_usage': expected a boolean.")
				}
			case name == "include_obfuscation" || validate.IsNull(v):
			default:
				return nil, unsupported("stream_options."+name, "is not supported by this gateway.")
			}
		}
	}
	return req, nil
}

// route reads `model` of a chat request: provider/model names the provider; a bare name goes
// to the provider the price table lists it under. An embedding model is refused.
func (s *Service) route(fields chatRequest, req *Request) error {
	model, p, m, err := s.modelOf(fields["model"])
	if err != nil {
		return err
	}
	req.Model, req.Provider, req.Input.Model = model, p, m
	return s.chatModel(p, m)
}

// modelOf reads a request's `model`: provider/model names the provider and the model; a bare
// name goes to the provider the price table lists it under (bare true).
func (s *Service) modelOf(raw json.RawMessage) (model, provider, name string, err error) {
	if validate.IsNull(raw) {
		return "", "", "", invalid("model", "", "You must provide a model parameter.")
	}
	if json.Unmarshal(raw, &model) != nil {
		return "", "", "", invalid("model", "invalid_type", "Invalid type for 'model': expected a string.")
	}
	if model == "" {
		return "", "", "", invalid("model", "", "You must provide a model parameter.")
	}
	if p, m, ok := strings.Cut(model, "/"); ok && isProvider(p) {
		if m == "" {
			return "", "", "", invalid("model", "model_not_found", "The model '%s' names no model after the provider.", model)
		}
		if !ai.ValidModel(m) {
			return "", "", "", invalid("model", "invalid_value", "Invalid 'model': %.140q is not a model name (letters, digits and . _ : @ -, at most 128).", m)
		}
		return model, p, m, nil
	}
	p, ok := s.prices.ProviderOf(model)
	if !ok {
		return "", "", "", invalid("model", "model_not_found", "The model '%s' is not known to this gateway: name it with its provider: %s.",
			model, strings.Join(prefixes, ", "))
	}
	return model, p, model, nil
}

func isProvider(name string) bool { return slices.Contains(providers.Names(), name) }

// prefixes are the model prefixes, for messages: openai/MODEL, ….
var prefixes = func() []string {
	names := providers.Names()
	for i, n := range names {
		names[i] = n + "/MODEL"
	}
	return names
}()

// parseMessages reads `messages`: roles system, developer (sent as system), user, assistant
// (its tool_calls included) and tool; content a string or an array of parts (text, and for a
// user image_url of at most maxImage bytes).
func parseMessages(raw json.RawMessage, maxImage int64) ([]ai.Message, error) {
	if validate.IsNull(raw) {
		return nil, invalid("messages", "", "Missing required parameter: 'messages'.")
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid("messages", "invalid_type", "Invalid type for 'messages': expected an array of objects.")
	}
	if len(items) == 0 {
		return nil, invalid("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1.")
	}
	out := make([]ai.Message, len(items))
	for i, item := range items {
		if err := parseMessage(fmt.Sprintf("messages[%d]", i), item, maxImage, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// messageFields are the fields a message of each role may carry.
var messageFields = map[string][]string{
	"system": {"content"}, "developer": {"content"}, "user": {"content"},
	"assistant": {"content", "tool_calls"}, "tool": {"content", "tool_call_id"},
}

// parseMessage reads the message at (messages[i]) into m.
func parseMessage(at string, item json.RawMessage, maxImage int64, m *ai.Message) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(item, &fields) != nil || fields == nil {
		return invalid(at, "invalid_type", "Invalid type for '%s': expected an object.", at)
	}
	const roles = "system, developer, user, assistant, tool"
	if json.Unmarshal(fields["role"], &m.Role) != nil {
		return invalid(at+".role", "invalid_type", "Invalid type for '%s.role': expected one of %s.", at, roles)
	}
	allowed, ok := messageFields[m.Role]
	switch {
	case m.Role == "function":
		return unsupported(at+".role", "'function' is not supported by this gateway: use tools and the 'tool' role.")
	case !ok:
		return invalid(at+".role", "invalid_value", "Invalid value for '%s.role': expected one of %s.", at, roles)
	}
	for name, v := range fields {
		if name != "role" && !slices.Contains(allowed, name) && !validate.IsNull(v) {
			return unsupported(at+"."+name, "is not supported by this gateway.")
		}
	}
	if m.Role == "developer" {
		m.Role = "system"
	}
	switch m.Role {
	case "assistant":
		calls, err := toolCalls(at+".tool_calls", fields["tool_calls"])
		if err != nil {
			return err
		}
		m.ToolCalls = calls
		if validate.IsNull(fields["content"]) && len(calls) > 0 {
			return nil
		}
	case "tool":
		if json.Unmarshal(fields["tool_call_id"], &m.ToolCallID) != nil || m.ToolCallID == "" {
			return invalid(at+".tool_call_id", "", "Missing required parameter: '%s.tool_call_id' (the id of the call this message answers).", at)
		}
	}
	text, parts, err := content(at+".content", fields["content"], m.Role == "user", maxImage)
	if err != nil {
		return err
	}
	m.Content, m.Parts = text, parts
	return nil
}

// toolCalls reads an assistant message's tool_calls.
func toolCalls(at string, raw json.RawMessage) ([]ai.ToolCall, error) {
	if validate.IsNull(raw) {
		return nil, nil
	}
	var items []struct {
		ID       *string `json:"id"`
		Type     *string `json:"type"`
		Function *struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid(at, "invalid_type", "Invalid type for '%s': expected an array of {id, type: \"function\", function: {name, arguments}}.", at)
	}
	out := make([]ai.ToolCall, len(items))
	for j, tc := range items {
		cat := fmt.Sprintf("%s[%d]", at, j)
		switch {
		case tc.ID == nil || *tc.ID == "":
			return nil, invalid(cat+".id", "", "Missing required parameter: '%s.id'.", cat)
		case tc.Type != nil && *tc.Type != "function":
			return nil, invalid(cat+".type", "invalid_value", "Invalid value for '%s.type': expected 'function'.", cat)
		case tc.Function == nil || tc.Function.Name == nil || *tc.Function.Name == "":
			return nil, invalid(cat+".function.name", "", "Missing required parameter: '%s.function.name'.", cat)
		}
		out[j] = ai.ToolCall{ID: *tc.ID, Name: *tc.Function.Name}
		if tc.Function.Arguments != nil {
			out[j].Arguments = *tc.Function.Arguments
		}
	}
	return out, nil
}

// content reads a message's content: a string, or an array of parts. Text parts alone are
// joined into the text; with images (allowed in user messages) they are the parts.
func content(at string, raw json.RawMessage, images bool, maxImage int64) (string, []ai.Part, error) {
	if validate.IsNull(raw) {
		return "", nil, invalid(at, "", "Missing required parameter: '%s'.", at)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return "", nil, invalid(at, "invalid_type", "Invalid type for '%s': expected a string or an array of content parts.", at)
	}
	parts := make([]ai.Part, len(items))
	hasImage := false
	for j, item := range items {
		pat := fmt.Sprintf("%s[%d]", at, j)
		var typ string
		if json.Unmarshal(item["type"], &typ) != nil {
			return "", nil, invalid(pat+".type", "invalid_type", "Invalid type for '%s.type': expected a string.", pat)
		}
		for name, v := range item {
			if name != "type" && name != typ && !validate.IsNull(v) { // a part holds its type's field
				return "", nil, unsupported(pat+"."+name, "is not supported by this gateway.")
			}
		}
		switch {
		case typ == "text":
			if json.Unmarshal(item["text"], &parts[j].Text) != nil {
				return "", nil, invalid(pat+".text", "invalid_type", "Invalid type for '%s.text': expected a string.", pat)
			}
		case typ == "image_url" && images:
			im, err := imagePart(pat+".image_url", item["image_url"], maxImage)
			if err != nil {
				return "", nil, err
			}
			parts[j].Image, hasImage = im, true
		case typ == "image_url":
			return "", nil, unsupported(pat+".type", "'image_url' is only supported in user messages.")
		default:
			return "", nil, unsupported(pat+".type", fmt.Sprintf("'%s' is not supported by this gateway (text and image_url parts only).", typ))
		}
	}
	if hasImage {
		return "", parts, nil
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil, nil
}

// imagePart reads an image_url part's {url, detail?}: a data: URL (base64, at most maxImage
// bytes decoded) or an http(s) URL.
func imagePart(at string, raw json.RawMessage, maxImage int64) (*ai.Image, error) {
	var v struct {
		URL    *string `json:"url"`
		Detail *string `json:"detail"`
	}
	if json.Unmarshal(raw, &v) != nil || v.URL == nil {
		return nil, invalid(at+".url", "", "Missing required parameter: '%s.url'.", at)
	}
	if err := onlyFields(at, raw, "url", "detail"); err != nil {
		return nil, err
	}
	im := &ai.Image{URL: *v.URL}
	if v.Detail != nil {
		switch *v.Detail {
		case "auto", "low", "high":
			im.Detail = *v.Detail
		default:
			return nil, invalid(at+".detail", "invalid_value", "Invalid value for '%s.detail': expected auto, low or high.", at)
		}
	}
	if strings.HasPrefix(im.URL, "data:") {
		d, err := dataImage(at, im.URL, maxImage, at+".url")
		if err != nil {
			return nil, err
		}
		d.Detail = im.Detail
		return d, nil
	}
	u, err := url.Parse(im.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, invalid(at+".url", "invalid_image_url", "Invalid '%s.url': expected an http(s) URL or a data: URL.", at)
	}
	return im, nil
}

// dataImage reads a data: URL (base64, an image media type, at most maxImage bytes decoded)
// into an image. A malformed URL is refused naming at.url; a too-large image naming
// sizeParam, the parameter that holds the data as the client sent it.
func dataImage(at, dataURL string, maxImage int64, sizeParam string) (*ai.Image, error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(dataURL, "data:"), ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || !strings.HasPrefix(mediaType, "image/") || data == "" {
		return nil, invalid(at+".url", "invalid_image_url", "Invalid '%s.url': a data URL must be data:image/TYPE;base64,DATA.", at)
	}
	if err := imageSize(sizeParam, data, maxImage); err != nil {
		return nil, err
	}
	// Read through once (bounded above) so that data a provider cannot decode is the client's
	// 400 here, not a provider's refusal after the call was counted.
	if _, err := io.Copy(io.Discard, base64.NewDecoder(base64.StdEncoding, strings.NewReader(data))); err != nil {
		return nil, invalid(sizeParam, "invalid_image_url", "Invalid '%s': the image data is not valid base64.", sizeParam)
	}
	return &ai.Image{URL: dataURL, MediaType: mediaType, Data: data}, nil
}

// imageSize refuses an inline image whose base64 data is larger than maxImage bytes decoded:
// a 413 image_too_large naming param, the parameter that holds the data as the client sent it
// (an image_url's url, an Anthropic source's data). The size is exact: the padding is not
// counted (StdEncoding.DecodedLen would count it, refusing an image of the limit's size).
func imageSize(param, data string, maxImage int64) error {
	size := len(data)
	for i := 0; i < 2 && size > 0 && data[size-1] == '='; i++ {
		size--
	}
	if n := int64(base64.RawStdEncoding.DecodedLen(size)); n > maxImage {
		return &apperr.Error{Kind: apperr.TooLarge, Param: param, Code: "image_too_large",
			Messages: []string{fmt.Sprintf("The image at '%s' is larger than this gateway's limit of %d bytes (ai.max_image_bytes).", param, maxImage)}}
	}
	return nil
}

// number reads an optional number in lo..hi.
func number(fields chatRequest, name string, lo, hi float64) (*float64, error) {
	raw := fields[name]
	if validate.IsNull(raw) {
		return nil, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) {
		return nil, invalid(name, "invalid_type", "Invalid type for '%s': expected a number.", name)
	}
	if f < lo || f > hi {
		return nil, invalid(name, "invalid_value", "Invalid '%s': %g is outside %g to %g.", name, f, lo, hi)
	}
	return &f, nil
}

// maxTokens reads max_completion_tokens, or the older max_tokens.
func maxTokens(fields chatRequest) (*int, error) {
	var out *int
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		raw := fields[name]
		if validate.IsNull(raw) {
			continue
		}
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
			return nil, invalid(name, "invalid_type", "Invalid type for '%s': expected an integer.", name)
		}
		if f < 1 || f > ai.MaxTokensLimit {
			return nil, invalid(name, "invalid_value", "Invalid '%s': expected an integer from 1 to %d.", name, ai.MaxTokensLimit)
		}
		n := int(f)
		if out != nil && *out != n {
			return nil, invalid(name, "invalid_value", "max_tokens and max_completion_tokens differ: send one of them.")
		}
		out = &n
	}
	return out, nil
}

// stops reads `stop`: a string or up to MaxStop strings.
func stops(raw json.RawMessage) ([]string, error) {
	if validate.IsNull(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return nil, invalid("stop", "invalid_type", "Invalid type for 'stop': expected a string or an array of strings.")
	}
	if len(list) > MaxStop {
		return nil, invalid("stop", "invalid_value", "Invalid 'stop': at most %d sequences.", MaxStop)
	}
	return list, nil
}

// compact is raw without insignificant spaces.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

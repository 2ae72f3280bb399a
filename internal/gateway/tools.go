package gateway

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/validate"
)

// MaxTools is the most tools one request may offer (OpenAI's limit).
const MaxTools = 128

// toolName is OpenAI's rule for a function's name, which every provider accepts.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// parseTools reads `tools`, `tool_choice` and `parallel_tool_calls` into in.
func parseTools(fields chatRequest, in *ai.ChatInput) error {
	if raw := fields["tools"]; !validate.IsNull(raw) {
		tools, err := tools(raw)
		if err != nil {
			return err
		}
		in.Tools = tools
	}
	if raw := fields["tool_choice"]; !validate.IsNull(raw) {
		choice, err := toolChoice(raw, in.Tools)
		if err != nil {
			return err
		}
		in.ToolChoice = choice
	}
	if raw := fields["parallel_tool_calls"]; !validate.IsNull(raw) {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return invalid("parallel_tool_calls", "invalid_type", "Invalid type for 'parallel_tool_calls': expected a boolean.")
		}
		if len(in.Tools) > 0 {
			in.ParallelToolCalls = &b
		}
	}
	return nil
}

// tools reads the function tools offered.
func tools(raw json.RawMessage) ([]ai.Tool, error) {
	var items []struct {
		Type     *string `json:"type"`
		Function *struct {
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid("tools", "invalid_type", "Invalid type for 'tools': expected an array of {type: \"function\", function: {name, description, parameters}}.")
	}
	if len(items) > MaxTools {
		return nil, invalid("tools", "array_above_max_length", "Invalid 'tools': at most %d tools.", MaxTools)
	}
	var raws []json.RawMessage
	_ = json.Unmarshal(raw, &raws) // the same array as items, each tool as sent
	out := make([]ai.Tool, len(items))
	seen := make(map[string]bool, len(items))
	for i, t := range items {
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type == nil:
			return nil, invalid(at+".type", "", "Missing required parameter: '%s.type'.", at)
		case *t.Type != "function":
			return nil, unsupported(at+".type", fmt.Sprintf("'%s' is not supported by this gateway (function tools only).", *t.Type))
		case t.Function == nil:
			return nil, invalid(at+".function.name", "", "Missing required parameter: '%s.function.name'.", at)
		}
		if err := checkToolName(at+".function", t.Function.Name, seen); err != nil {
			return nil, err
		}
		if err := toolFields(at, raws[i]); err != nil {
			return nil, err
		}
		out[i] = ai.Tool{Name: *t.Function.Name, Strict: t.Function.Strict}
		if t.Function.Description != nil {
			out[i].Description = *t.Function.Description
		}
		if !validate.IsNull(t.Function.Parameters) {
			if !isObject(t.Function.Parameters) {
				return nil, invalid(at+".function.parameters", "invalid_type", "Invalid type for '%s.function.parameters': expected a JSON Schema object.", at)
			}
			out[i].Parameters = t.Function.Parameters
		}
	}
	return out, nil
}

// checkToolName refuses a function tool's name that is missing, outside OpenAI's rule, or
// declared before in the request (seen, to which it is added); at names the object holding the
// name (tools[0].function on chat completions, tools[0] on the Responses API).
func checkToolName(at string, name *string, seen map[string]bool) error {
	switch {
	case name == nil:
		return invalid(at+".name", "", "Missing required parameter: '%s.name'.", at)
	case !toolName.MatchString(*name):
		return invalid(at+".name", "invalid_value", "Invalid '%s.name': expected 1 to 64 letters, digits, underscores or dashes.", at)
	case seen[*name]:
		return invalid(at+".name", "invalid_value", "Invalid '%s.name': the tool %s is declared twice.", at, *name)
	}
	seen[*name] = true
	return nil
}

// toolFields refuses a field of a function tool, or of its function, that is not read.
func toolFields(at string, raw json.RawMessage) error {
	var t struct {
		Function json.RawMessage `json:"function"`
	}
	_ = json.Unmarshal(raw, &t)
	if err := onlyFields(at, raw, "type", "function"); err != nil {
		return err
	}
	return onlyFields(at+".function", t.Function, "name", "description", "parameters", "strict")
}

// toolChoice reads `tool_choice`: auto, none, required, or {type: "function", function:
// {name}} naming one of the tools.
func toolChoice(raw json.RawMessage, offered []ai.Tool) (ai.ToolChoice, error) {
	if len(offered) == 0 {
		return ai.ToolChoice{}, invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case ai.ToolAuto, ai.ToolNone, ai.ToolRequired:
			return ai.ToolChoice{Mode: mode}, nil
		}
		return ai.ToolChoice{}, invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': expected 'auto', 'none', 'required' or a named function.")
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Function.Name == "" {
		return ai.ToolChoice{}, invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': expected 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}.")
	}
	for _, t := range offered {
		if t.Name == named.Function.Name {
			return ai.ToolChoice{Mode: ai.ToolNamed, Name: t.Name}, nil
		}
	}
	return ai.ToolChoice{}, invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': no tool named '%s' is in 'tools'.", named.Function.Name)
}

// responseFormat reads `response_format`: text (nil), json_object, or json_schema with a
// name and a schema.
func responseFormat(raw json.RawMessage) (*ai.ResponseFormat, error) {
	if validate.IsNull(raw) {
		return nil, nil
	}
	var v struct {
		Type       *string `json:"type"`
		JSONSchema *struct {
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Type == nil {
		return nil, invalid("response_format", "invalid_type", "Invalid type for 'response_format': expected {type: \"text\" | \"json_object\" | \"json_schema\"}.")
	}
	switch *v.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &ai.ResponseFormat{Type: "json_object"}, nil
	case "json_schema":
	default:
		return nil, invalid("response_format.type", "invalid_value", "Invalid value for 'response_format.type': expected 'text', 'json_object' or 'json_schema'.")
	}
	js := v.JSONSchema
	switch {
	case js == nil || js.Name == nil:
		return nil, invalid("response_format.json_schema.name", "", "Missing required parameter: 'response_format.json_schema.name'.")
	case !toolName.MatchString(*js.Name):
		return nil, invalid("response_format.json_schema.name", "invalid_value", "Invalid 'response_format.json_schema.name': expected 1 to 64 letters, digits, underscores or dashes.")
	case !validate.IsNull(js.Schema) && !isObject(js.Schema):
		return nil, invalid("response_format.json_schema.schema", "invalid_type", "Invalid type for 'response_format.json_schema.schema': expected a JSON Schema object.")
	}
	f := &ai.ResponseFormat{Type: "json_schema", Name: *js.Name, Strict: js.Strict}
	if js.Description != nil {
		f.Description = *js.Description
	}
	if !validate.IsNull(js.Schema) {
		f.Schema = js.Schema
	}
	return f, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

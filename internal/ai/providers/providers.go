// Package providers names the AI providers the service speaks, with their defaults: the one
// list the configuration keys, the /api/ai routes, the gateway's model prefixes and the
// built-in mock's fakes are made from. A provider is this list's entry and its file in
// package ai (which a test holds to this list).
package providers

// Info is one provider: its name and defaults.
type Info struct {
	// Name is the provider's path segment, model prefix (name/model) and configuration
	// prefix (ai.<name>.*).
	Name string
	// Endpoint is the last segment of its /api/ai/<name>/<endpoint> route.
	Endpoint string
	// BaseURL and DefaultModel are the defaults of ai.<name>.base_url and
	// ai.<name>.default_model.
	BaseURL      string
	DefaultModel string
	// KeyEnv is the provider's own environment variable for the API key, read after
	// APP_AI_<NAME>_API_KEY.
	KeyEnv string
}

// List is every provider, in the order they are listed everywhere.
var List = []Info{
	{Name: "openai", Endpoint: "chat", BaseURL: "https://api.openai.com/v1", DefaultModel: "gpt-6-luna", KeyEnv: "OPENAI_API_KEY"},
	{Name: "anthropic", Endpoint: "messages", BaseURL: "https://api.anthropic.com/v1", DefaultModel: "claude-haiku-4-5", KeyEnv: "ANTHROPIC_API_KEY"},
	{Name: "gemini", Endpoint: "generate", BaseURL: "https://generativelanguage.googleapis.com/v1beta", DefaultModel: "gemini-3.1-flash-lite", KeyEnv: "GEMINI_API_KEY"},
}

// Names returns the providers' names, in List's order.
func Names() []string {
	out := make([]string, len(List))
	for i, p := range List {
		out[i] = p.Name
	}
	return out
}

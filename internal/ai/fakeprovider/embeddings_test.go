package fakeprovider_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai/fakeprovider"
)

// Ensure the fakes answer embeddings in their provider's format: deterministic vectors of the
// asked length, OpenAI's usage the words of the inputs (base64 when asked), Gemini's one
// vector per request and no usage, and a 400 for a body the provider would refuse.
func TestEmbeddings(t *testing.T) {
	t.Parallel()
	// "hello world" at 8 floats, as the vectors are defined (SHA-256 of "0:hello world").
	hello := []float32{-0.40625, -0.6484375, -0.296875, 0.234375, -0.1640625, -0.5703125, 0.28125, 0.5390625}
	if got := fakeprovider.EmbeddingVector("hello world", 8); !cmp.Equal(got, hello) {
		t.Fatalf("EmbeddingVector = %v", got)
	}
	if got := fakeprovider.EmbeddingVector("x", 70); len(got) != 70 {
		t.Fatalf("%d floats", len(got))
	}
	for _, tc := range []struct {
		name, provider, path, body string
		status                     int
		want                       string
	}{
		{"openai", "openai", "/embeddings", `{"model":"m","input":["hello world","a b c"]}`, 200,
			`{"object":"list","model":"m","usage":{"prompt_tokens":5,"total_tokens":5},"data":[` +
				`{"object":"embedding","index":0,"embedding":[-0.40625,-0.6484375,-0.296875,0.234375,-0.1640625,-0.5703125,0.28125,0.5390625]},` +
				`{"object":"embedding","index":1,"embedding":` + mustJSON(fakeprovider.EmbeddingVector("a b c", 8)) + `}]}`},
		{"openai base64, dimensions", "openai", "/embeddings", `{"model":"m","input":"hello world","encoding_format":"base64","dimensions":2}`, 200,
			`{"object":"list","model":"m","usage":{"prompt_tokens":2,"total_tokens":2},"data":[` +
				`{"object":"embedding","index":0,"embedding":"` + fakeprovider.EmbeddingBase64(hello[:2]) + `"}]}`},
		{"openai tokens", "openai", "/embeddings", `{"model":"m","input":[[1,2],[3]]}`, 200,
			`{"object":"list","model":"m","usage":{"prompt_tokens":3,"total_tokens":3},"data":[` +
				`{"object":"embedding","index":0,"embedding":` + mustJSON(fakeprovider.EmbeddingVector("1 2", 8)) + `},` +
				`{"object":"embedding","index":1,"embedding":` + mustJSON(fakeprovider.EmbeddingVector("3", 8)) + `}]}`},
		{"openai refuses", "openai", "/embeddings", `{"model":"m","input":{}}`, 400, ""},
		{"gemini", "gemini", "/models/e:batchEmbedContents",
			`{"requests":[{"model":"models/e","content":{"parts":[{"text":"hello world"}]},"outputDimensionality":3}]}`, 200,
			`{"embeddings":[{"values":[-0.40625,-0.6484375,-0.296875]}]}`},
		{"gemini refuses", "gemini", "/models/e:batchEmbedContents", `{"requests":[]}`, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := fakeprovider.Start(tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			resp, err := http.Post(s.BaseURL()+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got, want any
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %v", resp.StatusCode, got)
			}
			if tc.want == "" {
				return
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if c, _ := s.Last(); tc.provider == "gemini" && c.Model() != "e" {
				t.Fatalf("model %q", c.Model())
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

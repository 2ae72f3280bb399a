package keys

import (
	"testing"

	"github.com/acme/app/internal/store/storetest"
)

// TestMain removes the embedded store's files when the tests end.
func TestMain(m *testing.M) { storetest.Main(m) }

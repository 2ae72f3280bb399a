package budget

import (
	"testing"

	"github.com/acme/app/internal/store/storetest"
)

// TestMain removes the embedded store's files when the tests end (or runs a helper process of
// TestTwoProcessesShareBudget).
func TestMain(m *testing.M) { storetest.Main(m) }

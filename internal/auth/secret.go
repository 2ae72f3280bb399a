package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SecretFile is the name, inside the data directory, of the generated JWT secret.
const SecretFile = "jwt-secret"

// LoadOrCreateSecret returns the JWT secret kept in dataDir, generating 32 random bytes (mode
// 0600) the first time. created reports that a new secret was written.
func LoadOrCreateSecret(dataDir string) (secret []byte, created bool, err error) {
	path := filepath.Join(dataDir, SecretFile)
	if b, err := os.ReadFile(path); err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) >= 32 {
			return []byte(s), false, nil
		}
		return nil, false, fmt.Errorf("auth: %s holds a secret shorter than 32 characters", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("auth: %w", err) // os.ReadFile says "read PATH: …"
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, false, fmt.Errorf("auth: generate secret: %w", err)
	}
	s := hex.EncodeToString(buf)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("auth: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process won the race: use its secret
		return LoadOrCreateSecret(dataDir)
	}
	if err != nil {
		return nil, false, fmt.Errorf("auth: write %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(s + "\n"); err != nil {
		return nil, false, fmt.Errorf("auth: write %s: %w", path, err)
	}
	return []byte(s), true, nil
}

package embeddedmeta_test

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/boltformat"
	"github.com/queueshq/queues/pkg/meta/embeddedmeta"
)

// fileVersion opens the closed file at path, stamps it set unless set is 0, and returns its version.
func fileVersion(t *testing.T, path string, set uint64) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if set > 0 {
		if err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("format")).Put([]byte("version"), binary.BigEndian.AppendUint64(nil, set))
		}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := boltformat.Version(db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNewerFormatRefused: Open stamps meta.db with FormatVersion and refuses a file stamped
// newer, naming the file and the versions.
func TestNewerFormatRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := embeddedmeta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := fileVersion(t, path, 0); v != embeddedmeta.FormatVersion {
		t.Fatalf("a new meta.db is stamped %d, want %d", v, embeddedmeta.FormatVersion)
	}
	fileVersion(t, path, embeddedmeta.FormatVersion+1)
	s, err = embeddedmeta.Open(path)
	if err == nil {
		s.Close()
		t.Fatal("a meta.db of a newer format opened")
	}
	if !errors.Is(err, boltformat.ErrNewer) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "format version 2") {
		t.Fatalf("Open of a newer meta.db: %v, want boltformat.ErrNewer naming %s and version 2", err, path)
	}
}

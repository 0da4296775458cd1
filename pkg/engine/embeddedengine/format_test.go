package embeddedengine

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/boltformat"
	"github.com/queueshq/queues/pkg/engine/enginetest"
)

// TestNewerFormatRefused: Open stamps a new file with FormatVersion, reopens it, and refuses
// a file stamped newer (as a later binary would leave it) naming the file and the versions,
// without writing to it.
func TestNewerFormatRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "messages.db")
	e := openAt(t, path)
	q := testQueue(t, e)
	sendBodies(t, e, q, []string{"kept"})
	if v, err := boltformat.Version(e.db); err != nil || v != FormatVersion {
		t.Fatalf("a new file is stamped %d (%v), want %d", v, err, FormatVersion)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openAt(t, path)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("format")).Put([]byte("version"), binary.BigEndian.AppendUint64(nil, FormatVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(path, enginetest.NewClock(), Options{})
	if err == nil {
		_ = e.Close()
		t.Fatal("a file of a newer format opened")
	}
	if !errors.Is(err, boltformat.ErrNewer) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "format version 2") {
		t.Fatalf("Open of a newer file: %v, want boltformat.ErrNewer naming %s and version 2", err, path)
	}

	// Stamped back (the newer binary's data untouched), it opens with its message.
	db, err = bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("format")).Put([]byte("version"), binary.BigEndian.AppendUint64(nil, FormatVersion))
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	e = openAt(t, path)
	defer e.Close()
	if st, err := e.Stats(context.Background(), q); err != nil || st.Visible != 1 {
		t.Fatalf("after the refusal: %+v, %v; want the message kept", st, err)
	}
}

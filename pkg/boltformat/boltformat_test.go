package boltformat

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func open(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// stamp writes v as the file's version, as a binary of that version would.
func stamp(t *testing.T, db *bolt.DB, v uint64) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put(key, binary.BigEndian.AppendUint64(nil, v))
	}); err != nil {
		t.Fatal(err)
	}
}

// txid is the id of db's last committed write.
func txid(t *testing.T, db *bolt.DB) int {
	t.Helper()
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCheckAndStamp: an unstamped file is stamped, after its migration; a stamped one is
// left as it is (no write); an older stamp is migrated and raised.
func TestCheckAndStamp(t *testing.T) {
	t.Parallel()
	db := open(t, filepath.Join(t.TempDir(), "x.db"))
	if v, err := Version(db); err != nil || v != 0 {
		t.Fatalf("a new file: version %d, %v; want 0", v, err)
	}
	migrated := 0
	migrate := func() error {
		if v, _ := Version(db); v != 0 {
			t.Errorf("migration ran on a file stamped %d: the stamp must follow it", v)
		}
		migrated++
		return nil
	}
	if err := CheckAndStamp(db, 1, migrate); err != nil {
		t.Fatal(err)
	}
	if v, err := Version(db); err != nil || v != 1 || migrated != 1 {
		t.Fatalf("after CheckAndStamp: version %d, %v, %d migrations; want 1, 1", v, err, migrated)
	}
	before := txid(t, db)
	if err := CheckAndStamp(db, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := txid(t, db); got != before {
		t.Fatalf("a file at the version was written again (txid %d, was %d)", got, before)
	}
	// A failed migration leaves the file unstamped, so the next open migrates again.
	db2 := open(t, filepath.Join(t.TempDir(), "y.db"))
	boom := errors.New("boom")
	if err := CheckAndStamp(db2, 1, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed migration: %v", err)
	}
	if v, _ := Version(db2); v != 0 {
		t.Fatalf("stamped %d after a failed migration", v)
	}
	// An older stamp is raised.
	if err := CheckAndStamp(db, 2, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := Version(db); v != 2 {
		t.Fatalf("version %d after stamping 2", v)
	}
}

// TestNewerFormatRefused: a file stamped newer than the binary is refused before anything
// runs or is written, naming the file and both versions.
func TestNewerFormatRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "messages.db")
	db := open(t, path)
	stamp(t, db, 7)
	err := CheckAndStamp(db, 1, func() error {
		t.Fatal("the migration ran on a newer file")
		return nil
	})
	var ne *NewerError
	if !errors.Is(err, ErrNewer) || !errors.As(err, &ne) || ne.File != 7 || ne.Binary != 1 || ne.Path != path {
		t.Fatalf("newer file: %v, want a NewerError of %s, 7 > 1", err, path)
	}
	for _, s := range []string{path, "version 7", "up to 1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
	if v, _ := Version(db); v != 7 {
		t.Fatalf("the refused file's stamp changed to %d", v)
	}
	// A stamp that is not 8 bytes is an error, not version 0.
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	if err := Check(db, 1); err == nil || !strings.Contains(err.Error(), "unreadable format version") {
		t.Fatalf("a malformed stamp: %v", err)
	}
}

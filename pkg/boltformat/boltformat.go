// Package boltformat stamps the embedded store's bbolt files (messages.db, meta.db) with the
// version of their layout, so a binary never reads a file written in a layout it does not
// know. Issue 31: a file migrated by a newer binary (payloads moved into per-queue buckets)
// and then opened by an older one looked empty to it where the payloads had been, and the
// older binary went on writing to it. The files had no version to tell it.
//
// A file's version is an 8-byte big-endian integer under the key "version" of the top-level
// bucket "format". A file without one predates the stamp (version 0: every layout up to
// version 1, which the stores' own migrations bring forward at Open).
//
// When a layout needs a new version: when a binary of the current version would misread
// the file, i.e. records move or change meaning. New buckets that older binaries never open
// keep the version (messages.db's topic buckets, issue 30, were added within version 1: an
// older binary ignores them and leaves them as they are).
package boltformat

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var (
	bucket = []byte("format")
	key    = []byte("version")
)

// ErrNewer is the refusal of a file stamped with a version newer than the binary knows;
// errors.Is finds it in a *NewerError.
var ErrNewer = errors.New("boltformat: the file's format is newer than this binary's")

// NewerError is the refusal of a file written in a newer format than this binary's.
type NewerError struct {
	Path   string // the file
	File   uint64 // the version the file is stamped with
	Binary uint64 // the newest version this binary reads
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("%s is in format version %d, and this binary reads versions up to %d: "+
		"run a binary at least as new as the one that wrote it (opening it here could lose data)",
		e.Path, e.File, e.Binary)
}

// Unwrap returns ErrNewer.
func (e *NewerError) Unwrap() error { return ErrNewer }

// Version returns the version db is stamped with, 0 when it is not.
func Version(db *bolt.DB) (uint64, error) {
	var v uint64
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		v, err = read(tx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", db.Path(), err)
	}
	return v, nil
}

func read(tx *bolt.Tx) (uint64, error) {
	b := tx.Bucket(bucket)
	if b == nil {
		return 0, nil
	}
	raw := b.Get(key)
	if raw == nil {
		return 0, nil
	}
	if len(raw) != 8 {
		return 0, fmt.Errorf("unreadable format version %x", raw)
	}
	return binary.BigEndian.Uint64(raw), nil
}

// Check refuses (a *NewerError) a file stamped with a version newer than current. Call it
// right after bolt.Open, before anything writes to the file.
func Check(db *bolt.DB, current uint64) error {
	v, err := Version(db)
	if err != nil {
		return err
	}
	if v > current {
		return &NewerError{Path: db.Path(), File: v, Binary: current}
	}
	return nil
}

// Stamp records current as db's version unless the file holds it already. Call it once the
// store's migrations have brought the file to current: a file stamped before its migration
// finished would not be migrated again.
func Stamp(db *bolt.DB, current uint64) error {
	if v, err := Version(db); err != nil || v == current {
		return err
	}
	err := db.Update(func(tx *bolt.Tx) error {
		v, err := read(tx)
		if err != nil {
			return err
		}
		if v > current { // stamped by a newer binary since Check
			return &NewerError{Path: db.Path(), File: v, Binary: current}
		}
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put(key, binary.BigEndian.AppendUint64(nil, current))
	})
	var newer *NewerError
	if err != nil && !errors.As(err, &newer) {
		return fmt.Errorf("%s: stamping format version %d: %w", db.Path(), current, err)
	}
	return err
}

// CheckAndStamp is Check, then migrate (nil: none), then Stamp: what a store's Open does.
func CheckAndStamp(db *bolt.DB, current uint64, migrate func() error) error {
	if err := Check(db, current); err != nil {
		return err
	}
	if migrate != nil {
		if err := migrate(); err != nil {
			return err
		}
	}
	return Stamp(db, current)
}

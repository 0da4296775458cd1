package embeddedmeta

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/meta"
)

// bSigKeys holds the JWT signing keys as JSON, keyed by kid.
var bSigKeys = []byte("signingkeys")

var _ meta.SigningKeyStore = (*Store)(nil)

// SigningKeys lists the stored JWT signing keys, oldest first.
func (s *Store) SigningKeys(context.Context) ([]meta.SigningKey, error) {
	var out []meta.SigningKey
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = sigKeys(tx)
		return err
	})
	return out, err
}

func sigKeys(tx *bolt.Tx) ([]meta.SigningKey, error) {
	var out []meta.SigningKey
	b := tx.Bucket(bSigKeys)
	if b == nil { // a file opened read-only by an older layout
		return nil, nil
	}
	err := b.ForEach(func(k, _ []byte) error {
		var sk meta.SigningKey
		if _, err := getJSON(b, k, &sk); err != nil {
			return err
		}
		out = append(out, sk)
		return nil
	})
	sortKeys(out)
	return out, err
}

func sortKeys(ks []meta.SigningKey) {
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j].CreatedAt.Before(ks[j-1].CreatedAt); j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
}

// AddSigningKey stores k unless a key created at or after notBefore exists; the check and
// the write are one transaction, so two replicas rotating at once add one key.
func (s *Store) AddSigningKey(_ context.Context, k meta.SigningKey, notBefore time.Time) (bool, error) {
	added := false
	err := s.update(func(tx *bolt.Tx) error {
		ks, err := sigKeys(tx)
		if err != nil {
			return err
		}
		for _, o := range ks {
			if !o.CreatedAt.Before(notBefore) {
				return nil
			}
		}
		k.CreatedAt, k.RetireAt = k.CreatedAt.UTC(), k.RetireAt.UTC()
		added = true
		return putJSON(tx.Bucket(bSigKeys), []byte(k.KID), k)
	})
	return added, err
}

// DeleteSigningKey removes a key (absent: no error).
func (s *Store) DeleteSigningKey(_ context.Context, kid string) error {
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bSigKeys).Delete([]byte(kid)) })
}

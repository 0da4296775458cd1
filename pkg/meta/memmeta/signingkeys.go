package memmeta

import (
	"context"
	"slices"
	"time"

	"github.com/queueshq/queues/pkg/meta"
)

var _ meta.SigningKeyStore = (*Store)(nil)

// SigningKeys lists the stored JWT signing keys, oldest first.
func (s *Store) SigningKeys(context.Context) ([]meta.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.sigKeys)
	for i := range out {
		out[i].PrivateKeyDER = slices.Clone(out[i].PrivateKeyDER)
	}
	return out, nil
}

// AddSigningKey stores k unless a key created at or after notBefore exists.
func (s *Store) AddSigningKey(_ context.Context, k meta.SigningKey, notBefore time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.sigKeys {
		if !o.CreatedAt.Before(notBefore) {
			return false, nil
		}
	}
	k.PrivateKeyDER = slices.Clone(k.PrivateKeyDER)
	k.CreatedAt, k.RetireAt = k.CreatedAt.UTC(), k.RetireAt.UTC()
	s.sigKeys = append(s.sigKeys, k)
	return true, nil
}

// DeleteSigningKey removes a key (absent: no error).
func (s *Store) DeleteSigningKey(_ context.Context, kid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigKeys = slices.DeleteFunc(s.sigKeys, func(k meta.SigningKey) bool { return k.KID == kid })
	return nil
}

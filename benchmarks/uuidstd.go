//go:build go1.27

package main

import "uuid"

// newStdUUID is Go 1.27's uuid.NewV7, which cannot fail.
func newStdUUID() (*peer, error) {
	return uuidV7Peer("uuid.NewV7 (std)", uuidV7Note, func() ([16]byte, bool) { return uuid.NewV7(), true }), nil
}

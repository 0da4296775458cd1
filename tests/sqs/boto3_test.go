package sqs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoto3Suite runs tests/sqsboto (Python unittest with boto3) against both backends, once
// per SQS protocol: botocore loads the SQS model of that protocol from tests/sqsboto/models
// (AWS_DATA_PATH), and the suite checks every request's Content-Type and X-Amz-Target, so a
// run on the wrong protocol fails. Without python3 and boto3 it is skipped, unless
// QUEUES_REQUIRE_BOTO3 is set (scripts/test.sh installs Debian's python3-boto3 and sets it).
func TestBoto3Suite(t *testing.T) {
	python := os.Getenv("QUEUES_PYTHON")
	if python == "" {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import boto3").Run(); err != nil {
		if os.Getenv("QUEUES_REQUIRE_BOTO3") != "" {
			t.Fatalf("%s cannot import boto3: %v", python, err)
		}
		t.Skipf("%s cannot import boto3 (%v): install python3-boto3", python, err)
	}
	suite, err := filepath.Abs("../sqsboto")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		for _, proto := range []string{"json", "query"} {
			t.Run(b.name+"/"+proto, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, b, []string{"*"})
				cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "discover", "-v", "-s", suite, "-p", "test_*.py")
				cmd.Dir = suite
				cmd.Env = append(withoutAWS(os.Environ()),
					"QUEUES_SQSBOTO_URL="+b.url,
					"QUEUES_SQSBOTO_KEY="+e.token.Slug,
					"QUEUES_SQSBOTO_SECRET="+e.token.SQSSecretAccessKey,
					"QUEUES_SQSBOTO_PROTOCOL="+proto,
					"QUEUES_SQSBOTO_BACKEND="+b.name,
					"AWS_DATA_PATH="+filepath.Join(suite, "models", proto),
					"AWS_CONFIG_FILE="+os.DevNull,
					"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
					"PYTHONDONTWRITEBYTECODE=1",
				)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("tests/sqsboto (%s, %s): %v\n%s", b.name, proto, err, out)
				}
				t.Logf("tests/sqsboto (%s, %s):\n%s", b.name, proto, out)
			})
		}
	}
}

// withoutAWS is the environment less its AWS_ variables: nothing of the machine's AWS setup
// (profile, region, endpoint, data path) may change what the suite sends.
func withoutAWS(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

package sqs_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestQueryProtocolSDK runs the nested module tests/sqslegacy (aws-sdk-go-v2/service/sqs
// v1.26.0, the last query-protocol release) against both backends of this binary.
func TestQueryProtocolSDK(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run the nested module")
	}
	type target struct {
		Name    string `json:"name"`
		URL     string `json:"url"`
		Project string `json:"project"`
		Key     string `json:"key"`
		Secret  string `json:"secret"`
		Bearer  string `json:"bearer"`
	}
	var ts []target
	for _, b := range backends {
		e := newEnv(t, b, []string{"*"})
		ts = append(ts, target{b.name, b.url, e.project, e.token.Slug, e.token.SQSSecretAccessKey, e.token.Token})
	}
	enc, _ := json.Marshal(ts)
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "./...")
	cmd.Dir = "../sqslegacy"
	cmd.Env = append(os.Environ(), "QUEUES_SQSLEGACY_TARGETS="+string(enc))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests/sqslegacy: %v\n%s", err, out)
	}
	t.Logf("tests/sqslegacy:\n%s", out)
}

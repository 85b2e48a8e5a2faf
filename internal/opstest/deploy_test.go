package opstest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// documentedEnv are the variables README.md ("Configuration") documents;
// the manifests together must set every one.
var documentedEnv = []string{
	"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_REDIS_URL", "RUNSTREAM_KAFKA_BROKERS",
	"RUNSTREAM_TOPIC", "RUNSTREAM_GROUP", "RUNSTREAM_HTTP_ADDR",
}

// componentEnv is what each component needs set in a deployment (the
// binary's defaults are loopback addresses).
var componentEnv = map[string][]string{
	"api": {"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_REDIS_URL", "RUNSTREAM_KAFKA_BROKERS", "RUNSTREAM_GROUP",
		"RUNSTREAM_HTTP_ADDR", "RUNSTREAM_AUTH_TOKENS"},
	"relay":     {"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_KAFKA_BROKERS", "RUNSTREAM_TOPIC", "RUNSTREAM_HTTP_ADDR"},
	"projector": {"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_REDIS_URL", "RUNSTREAM_KAFKA_BROKERS", "RUNSTREAM_TOPIC", "RUNSTREAM_GROUP", "RUNSTREAM_HTTP_ADDR"},
	"etl": {"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_ETL_DATABASE_URL", "RUNSTREAM_KAFKA_BROKERS", "RUNSTREAM_TOPIC", "RUNSTREAM_GROUP",
		"RUNSTREAM_HTTP_ADDR"},
}

// ownGroup are the components that consume the topic: each needs its own
// consumer group (two sharing one would split the partitions, and each
// would miss the records the other consumed).
var ownGroup = []string{"projector", "etl"}

// defaultPorts are the ports the binaries listen on by default, which the
// scrape config and the annotations assume.
var defaultPorts = map[string]int{"api": 8080, "relay": 9464, "projector": 9465, "etl": 9466}

// TestDeployFilesParse parses every YAML document in deploy/ and the
// dashboard JSON.
func TestDeployFilesParse(t *testing.T) {
	root := moduleRoot(t)
	var yamls, jsons int
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch filepath.Ext(path) {
		case ".yml", ".yaml":
			docs := yamlDocs(t, path)
			if len(docs) == 0 {
				t.Errorf("%s: no YAML document", rel)
			}
			yamls++
		case ".json":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			jsons++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if yamls < 10 || jsons < 1 {
		t.Fatalf("found %d YAML and %d JSON files in deploy/, expected the alerts, compose, k8s and the dashboard", yamls, jsons)
	}
}

// TestMetricNamesExist checks that the alert rules and the dashboard only
// read metrics the code exports (a renamed metric would silently empty a
// panel or disarm an alert).
func TestMetricNamesExist(t *testing.T) {
	root := moduleRoot(t)
	exported := exportedMetrics(t, root)
	for _, must := range []string{"runstream_projector_lag_seconds", "runstream_consumer_lag_seconds",
		"runstream_outbox_oldest_age_seconds", "runstream_store_appends_total"} {
		if !exported[must] {
			t.Fatalf("exportedMetrics did not find %s: the scan of the Go sources is broken", must)
		}
	}
	check := func(where, expr string) {
		for _, n := range metricName.FindAllString(expr, -1) {
			base := n
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suf); ok && exported[b] {
					base = b
				}
			}
			if !exported[base] {
				t.Errorf("%s reads %s, which no Go source exports", where, n)
			}
		}
	}
	for _, r := range loadRules(t, filepath.Join(root, "deploy", "prometheus", "alerts.yml")) {
		if len(r.metrics) == 0 {
			t.Errorf("alert %s reads no runstream_ metric", r.name)
		}
		check("alert "+r.name, r.expr)
	}
	for _, p := range dashboardQueries(t, root) {
		check(fmt.Sprintf("dashboard panel %q", p.panel), p.expr)
	}
}

// TestAlertRulesContract checks names and severities against
// ExecutionSemantics v1 and that every rule says what to do.
func TestAlertRulesContract(t *testing.T) {
	root := moduleRoot(t)
	want := map[string]string{
		"PROJECTOR_LAG_HIGH":                      "P2",
		"PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED": "P2",
		"PROJECTOR_CAUSAL_VIOLATION":              "P3",
		"EVENT_BUS_DELIVERY_FAILED":               "P1",
		"OUTBOX_BACKLOG_AGE_HIGH":                 "P2",
		"PROJECTOR_STALE_RUNS":                    "P2",
		"READ_SIDE_REPAIRED":                      "P2",
		"READ_SIDE_CONVERGENCE_STALLED":           "P2",
		"RUN_EVENT_CLOCK_SKEW_HIGH":               "P3", // RunEvents v1: large emittedAt/persistedAt deltas
		"ETL_LAG_HIGH":                            "P3", // the analytics ETL behind by minutes
		"REDIS_SNAPSHOTS_LOST":                    "P2", // a cache loss convergence repairs
		"SNAPSHOT_FRESHNESS_LOW":                  "P2", // freshness: what users feel
		"API_APPENDS_FAILING":                     "P1", // engines fail steps or spool
		"STORE_UNREACHABLE":                       "P1", // nothing can be appended
		"LAKE_UPLOAD_FAILING":                     "P3", // the lake's bucket refuses writes: nothing lost, files stop
		"LAKE_LAG_HIGH":                           "P3", // the lake behind by more than its rotation
	}
	got := map[string]string{}
	for _, r := range loadRules(t, filepath.Join(root, "deploy", "prometheus", "alerts.yml")) {
		if _, dup := got[r.name]; dup {
			t.Errorf("alert %s defined twice", r.name)
		}
		got[r.name] = r.labels["severity"]
		for _, a := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.annots[a]) == "" {
				t.Errorf("alert %s has no %s annotation", r.name, a)
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("alerts and severities = %v, want %v", got, want)
	}
	tests, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !bytes.Contains(tests, []byte("alertname: "+name+"\n")) {
			t.Errorf("alerts_test.yml does not test %s", name)
		}
	}
}

// TestComposeFile checks the compose services set the documented
// variables, only real flags, and health-check /readyz on the port they
// listen on.
func TestComposeFile(t *testing.T) {
	root := moduleRoot(t)
	flags := knownFlags(t, root)
	docs := yamlDocs(t, filepath.Join(root, "deploy", "compose.yaml"))
	var compose struct {
		Services map[string]struct {
			Image       string         `yaml:"image"`
			Build       map[string]any `yaml:"build"`
			Command     []string       `yaml:"command"`
			Environment map[string]any `yaml:"environment"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := docs[0].Decode(&compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	all := map[string]bool{}
	groups := map[string]string{}
	for comp, need := range componentEnv {
		svc, ok := compose.Services[comp]
		if !ok {
			t.Errorf("compose.yaml has no service %q", comp)
			continue
		}
		if len(svc.Command) == 0 || svc.Command[0] != comp {
			t.Errorf("compose service %s runs %v, want [%s]", comp, svc.Command, comp)
		}
		if svc.Build["dockerfile"] != "deploy/Dockerfile" {
			t.Errorf("compose service %s is not built from deploy/Dockerfile: %v", comp, svc.Build)
		}
		for k := range svc.Environment {
			all[k] = true
			checkFlagEnv(t, flags, "compose service "+comp, k)
		}
		for _, k := range need {
			if _, ok := svc.Environment[k]; !ok {
				t.Errorf("compose service %s does not set %s", comp, k)
			}
		}
		port := addrPort(t, "compose service "+comp, fmt.Sprint(svc.Environment["RUNSTREAM_HTTP_ADDR"]))
		if port != defaultPorts[comp] {
			t.Errorf("compose service %s listens on %d, the scrape config expects %d", comp, port, defaultPorts[comp])
		}
		hc := strings.Join(svc.Healthcheck.Test, " ")
		if !strings.Contains(hc, fmt.Sprintf(":%d/readyz", port)) {
			t.Errorf("compose service %s health check %q is not /readyz on port %d", comp, hc, port)
		}
		if slices.Contains(ownGroup, comp) {
			groups[comp] = fmt.Sprint(svc.Environment["RUNSTREAM_GROUP"])
		}
	}
	checkOwnGroups(t, "compose.yaml", groups)
	for _, k := range documentedEnv {
		if !all[k] {
			t.Errorf("compose.yaml never sets %s", k)
		}
	}
	for _, s := range []string{"postgres", "redis", "redpanda"} {
		if _, ok := compose.Services[s]; !ok {
			t.Errorf("compose.yaml has no %s service", s)
		}
	}
}

// k8sObject is the part of a Kubernetes object the test reads.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Resources  []string          `yaml:"resources"`
	Spec       struct {
		// Deployment
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		// PodDisruptionBudget
		MinAvailable   any `yaml:"minAvailable"`
		MaxUnavailable any `yaml:"maxUnavailable"`
	} `yaml:"spec"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
			ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
			FieldRef        *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	ReadinessProbe *probe          `yaml:"readinessProbe"`
	LivenessProbe  *probe          `yaml:"livenessProbe"`
	Resources      map[string]any  `yaml:"resources"`
	Lifecycle      *map[string]any `yaml:"lifecycle"`
}

type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

// TestKubernetesManifests checks the Deployments (and the projector's
// StatefulSet, whose pod names are its static group members' instance
// ids): readiness on /readyz,
// liveness on /healthz, on the port RUNSTREAM_HTTP_ADDR listens on; env
// from the ConfigMap and the Secret covering what each component needs;
// a PodDisruptionBudget and a Service selecting each Deployment's pods.
func TestKubernetesManifests(t *testing.T) {
	root := moduleRoot(t)
	flags := knownFlags(t, root)
	dir := filepath.Join(root, "deploy", "k8s")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	var objs []k8sObject
	var kustomization *k8sObject
	for _, f := range files {
		for i, doc := range yamlDocs(t, f) {
			var o k8sObject
			if err := doc.Decode(&o); err != nil {
				t.Fatalf("%s document %d: %v", filepath.Base(f), i, err)
			}
			if o.Kind == "" || o.APIVersion == "" {
				t.Errorf("%s document %d has no kind or apiVersion", filepath.Base(f), i)
			}
			if o.Kind == "Kustomization" {
				kustomization = &o
				continue
			}
			if o.Metadata.Name == "" {
				t.Errorf("%s document %d (%s) has no name", filepath.Base(f), i, o.Kind)
			}
			objs = append(objs, o)
		}
	}
	// kustomization.yaml lists every manifest.
	if kustomization == nil {
		t.Fatal("deploy/k8s has no kustomization.yaml")
	}
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(kustomization.Resources, b) {
			t.Errorf("kustomization.yaml does not list %s", b)
		}
	}
	byKind := map[string]map[string]k8sObject{}
	for _, o := range objs {
		if byKind[o.Kind] == nil {
			byKind[o.Kind] = map[string]k8sObject{}
		}
		byKind[o.Kind][o.Metadata.Name] = o
	}
	// The two secrets live in the Secret, not the ConfigMap.
	for _, cm := range byKind["ConfigMap"] {
		for _, k := range []string{"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_AUTH_TOKENS"} {
			if _, ok := cm.Data[k]; ok {
				t.Errorf("ConfigMap %s holds %s: it belongs in the Secret", cm.Metadata.Name, k)
			}
		}
	}
	var secretKeys []string
	for _, s := range byKind["Secret"] {
		secretKeys = slices.AppendSeq(secretKeys, maps.Keys(s.StringData))
		secretKeys = slices.AppendSeq(secretKeys, maps.Keys(s.Data))
	}
	for _, k := range []string{"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_AUTH_TOKENS"} {
		if !slices.Contains(secretKeys, k) {
			t.Errorf("no Secret holds %s", k)
		}
	}

	allEnv := map[string]bool{}
	groups := map[string]string{}
	for comp, need := range componentEnv {
		name := "runstream-" + comp
		d, ok := byKind["Deployment"][name]
		if s, isSet := byKind["StatefulSet"][name]; isSet && !ok {
			d, ok = s, true // the projector: stable pod names for static membership
		}
		if !ok {
			t.Errorf("no Deployment (or StatefulSet) %s", name)
			continue
		}
		podLabels := d.Spec.Template.Metadata.Labels
		if len(d.Spec.Selector.MatchLabels) == 0 || !subset(d.Spec.Selector.MatchLabels, podLabels) {
			t.Errorf("Deployment %s: selector %v does not select its pod labels %v", name, d.Spec.Selector.MatchLabels, podLabels)
		}
		if d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
			t.Errorf("Deployment %s sets no terminationGracePeriodSeconds", name)
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("Deployment %s has %d containers, want 1", name, len(d.Spec.Template.Spec.Containers))
		}
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != comp {
			t.Errorf("Deployment %s runs %v, want [%s]", name, c.Args, comp)
		}
		if c.Resources["requests"] == nil {
			t.Errorf("Deployment %s sets no resource requests", name)
		}
		env := resolveEnv(t, name, c, byKind)
		// A group.instance.id shared by two replicas would fence one of
		// them: it must be each pod's own name.
		if id, ok := env["RUNSTREAM_INSTANCE_ID"]; ok && id != "(field metadata.name)" {
			t.Errorf("%s %s: RUNSTREAM_INSTANCE_ID is %q, want the pod's name (fieldRef metadata.name)", d.Kind, name, id)
		}
		if slices.Contains(ownGroup, comp) {
			if _, ok := env["RUNSTREAM_INSTANCE_ID"]; !ok || d.Kind != "StatefulSet" {
				t.Errorf("the %s is a %s without RUNSTREAM_INSTANCE_ID from its pod name: want a StatefulSet (stable names) that sets it", comp, d.Kind)
			}
			groups[comp] = env["RUNSTREAM_GROUP"]
		}
		for k := range env {
			allEnv[k] = true
			checkFlagEnv(t, flags, "Deployment "+name, k)
		}
		for _, k := range need {
			if _, ok := env[k]; !ok {
				t.Errorf("Deployment %s does not set %s", name, k)
			}
		}
		port := addrPort(t, "Deployment "+name, env["RUNSTREAM_HTTP_ADDR"])
		if port != defaultPorts[comp] {
			t.Errorf("Deployment %s listens on %d, the scrape config expects %d", name, port, defaultPorts[comp])
		}
		if a := d.Spec.Template.Metadata.Annotations["prometheus.io/port"]; a != strconv.Itoa(port) {
			t.Errorf("Deployment %s: prometheus.io/port %q, listens on %d", name, a, port)
		}
		for _, pc := range []struct {
			what, path string
			p          *probe
		}{{"readinessProbe", "/readyz", c.ReadinessProbe}, {"livenessProbe", "/healthz", c.LivenessProbe}} {
			if pc.p == nil || pc.p.HTTPGet == nil {
				t.Errorf("Deployment %s has no HTTP %s", name, pc.what)
				continue
			}
			if pc.p.HTTPGet.Path != pc.path {
				t.Errorf("Deployment %s: %s on %q, want %s", name, pc.what, pc.p.HTTPGet.Path, pc.path)
			}
			if got := probePort(c, pc.p.HTTPGet.Port); got != port {
				t.Errorf("Deployment %s: %s on port %v (%d), but RUNSTREAM_HTTP_ADDR listens on %d", name, pc.what, pc.p.HTTPGet.Port, got, port)
			}
		}
		// A PodDisruptionBudget and a Service select the pods.
		var pdbs, svcs []string
		for _, p := range byKind["PodDisruptionBudget"] {
			if len(p.Spec.Selector.MatchLabels) > 0 && subset(p.Spec.Selector.MatchLabels, podLabels) {
				pdbs = append(pdbs, p.Metadata.Name)
				if p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil {
					t.Errorf("PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", p.Metadata.Name)
				}
			}
		}
		if len(pdbs) != 1 {
			t.Errorf("Deployment %s: %d PodDisruptionBudgets select its pods (%v), want 1", name, len(pdbs), pdbs)
		}
		for _, s := range byKind["Service"] {
			if sel := serviceSelector(t, dir, s.Metadata.Name); len(sel) > 0 && subset(sel, podLabels) {
				svcs = append(svcs, s.Metadata.Name)
			}
		}
		if len(svcs) == 0 {
			t.Errorf("Deployment %s: no Service selects its pods", name)
		}
	}
	for _, k := range documentedEnv {
		if !allEnv[k] {
			t.Errorf("the Kubernetes manifests never set %s", k)
		}
	}
	checkOwnGroups(t, "deploy/k8s", groups)
}

// checkOwnGroups fails when two consuming components share a consumer
// group, or one has none.
func checkOwnGroups(t *testing.T, where string, groups map[string]string) {
	t.Helper()
	byGroup := map[string]string{}
	for _, comp := range ownGroup {
		g := groups[comp]
		if g == "" || g == "<nil>" {
			t.Errorf("%s: the %s sets no RUNSTREAM_GROUP", where, comp)
			continue
		}
		if other, dup := byGroup[g]; dup {
			t.Errorf("%s: the %s and the %s share the consumer group %q: each would get only part of the partitions", where, other, comp, g)
		}
		byGroup[g] = comp
	}
}

// resolveEnv is a container's environment: env entries (values, secret and
// config map keys, which must exist) and envFrom config maps and secrets.
func resolveEnv(t *testing.T, name string, c container, byKind map[string]map[string]k8sObject) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, ok := byKind["ConfigMap"][ef.ConfigMapRef.Name]
			if !ok {
				t.Errorf("Deployment %s: envFrom ConfigMap %q does not exist", name, ef.ConfigMapRef.Name)
			}
			maps.Copy(env, cm.Data)
		case ef.SecretRef != nil:
			s, ok := byKind["Secret"][ef.SecretRef.Name]
			if !ok {
				t.Errorf("Deployment %s: envFrom Secret %q does not exist", name, ef.SecretRef.Name)
			}
			maps.Copy(env, s.StringData)
			for k := range s.Data {
				env[k] = "(secret)"
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := byKind["Secret"][ref.Name]
			_, inString := s.StringData[ref.Key]
			_, inData := s.Data[ref.Key]
			if !ok || !(inString || inData) {
				t.Errorf("Deployment %s: %s refers to Secret %s key %s, which does not exist", name, e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = "(secret)"
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "(field " + e.ValueFrom.FieldRef.FieldPath + ")"
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			v, ok := byKind["ConfigMap"][ref.Name].Data[ref.Key]
			if !ok {
				t.Errorf("Deployment %s: %s refers to ConfigMap %s key %s, which does not exist", name, e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		}
	}
	return env
}

// serviceSelector reads spec.selector of the Service name in dir (a plain
// map, unlike a Deployment's matchLabels).
func serviceSelector(t *testing.T, dir, name string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			var s struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Name string `yaml:"name"`
				} `yaml:"metadata"`
				Spec struct {
					Selector map[string]string `yaml:"selector"`
				} `yaml:"spec"`
			}
			if doc.Decode(&s) == nil && s.Kind == "Service" && s.Metadata.Name == name {
				return s.Spec.Selector
			}
		}
	}
	return nil
}

func probePort(c container, port any) int {
	switch p := port.(type) {
	case int:
		return p
	case string:
		for _, cp := range c.Ports {
			if cp.Name == p {
				return cp.ContainerPort
			}
		}
	}
	return -1
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func addrPort(t *testing.T, where, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s: RUNSTREAM_HTTP_ADDR %q: %v", where, addr, err)
		return -1
	}
	n, _ := strconv.Atoi(p)
	return n
}

// checkFlagEnv fails t when a RUNSTREAM_ variable is not some command's
// flag (a typo would be silently ignored by the binary).
func checkFlagEnv(t *testing.T, flags map[string]bool, where, env string) {
	t.Helper()
	name, ok := strings.CutPrefix(env, "RUNSTREAM_")
	if !ok {
		return
	}
	flag := strings.ReplaceAll(strings.ToLower(name), "_", "-")
	if !flags[flag] {
		t.Errorf("%s sets %s, but no command has a flag --%s", where, env, flag)
	}
}

// knownFlags are the quoted flag-like names in cmd/runstream's sources.
func knownFlags(t *testing.T, root string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "cmd", "runstream", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources in cmd/runstream: %v", err)
	}
	re := regexp.MustCompile(`(?:String|Int|Int64|Bool|Duration|Float64|Uint|Var|StringVar|IntVar|Int64Var|BoolVar|DurationVar|Float64Var)\(\s*(?:&?[\w.]+,\s*)?"([a-z][a-z0-9-]*)"`)
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			out[string(m[1])] = true
		}
	}
	for _, must := range []string{"postgres-url", "redis-url", "kafka-brokers", "topic", "group", "http-addr", "auth-tokens"} {
		if !out[must] {
			t.Fatalf("knownFlags did not find --%s in cmd/runstream: the scan is broken", must)
		}
	}
	return out
}

// exportedMetrics are the runstream_ names in quotes in the non-test Go
// sources of the module.
func exportedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"(runstream_[a-z0-9_]+)"`)
	out := map[string]bool{}
	for _, dir := range []string{"internal", "projector", "store", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllSubmatch(src, -1) {
				out[string(m[1])] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// yamlDocs decodes every document of a YAML file into nodes.
func yamlDocs(t *testing.T, path string) []*yaml.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, &n)
	}
}

// dashboardQuery is one PromQL expression of the dashboard.
type dashboardQuery struct {
	panel, expr string
}

// dashboardQueries checks the dashboard's structure and returns its
// queries.
func dashboardQueries(t *testing.T, root string) []dashboardQuery {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "runstream.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		GridPos *struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana/runstream.json: %v", err)
	}
	if dash.UID == "" || dash.Title == "" || dash.SchemaVersion == 0 || len(dash.Panels) == 0 {
		t.Fatalf("grafana/runstream.json: uid %q, title %q, schemaVersion %d, %d panels: not a dashboard",
			dash.UID, dash.Title, dash.SchemaVersion, len(dash.Panels))
	}
	vars := map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	ids := map[int]bool{}
	var out []dashboardQuery
	varRef := regexp.MustCompile(`\$\{?(\w+)`)
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("dashboard: panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 || p.Title == "" {
			t.Errorf("dashboard: panel %d (%q) has no title or grid position", p.ID, p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || len(p.Targets) == 0 {
			t.Errorf("dashboard: panel %q has no Prometheus data source or no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("dashboard: panel %q has a query without refId or expr", p.Title)
			}
			for _, m := range varRef.FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[m[1]] {
					t.Errorf("dashboard: panel %q uses undefined variable $%s", p.Title, m[1])
				}
			}
			out = append(out, dashboardQuery{p.Title, tg.Expr})
		}
	}
	// The dashboard shows what the issue asks for.
	all := ""
	for _, q := range out {
		all += q.expr + "\n"
	}
	for _, must := range []string{
		"runstream_store_appends_total", "runstream_relay_published_total", "runstream_projector_events_total",
		"by (partition)", "runstream_outbox_oldest_age_seconds", "runstream_outbox_backlog_rows",
		"runstream_projector_resyncs_total", "runstream_projector_stale_runs", "runstream_outbox_dead_letters",
		"runstream_relay_dead_letters_total",
	} {
		if !strings.Contains(all, must) {
			t.Errorf("dashboard: no query uses %s", must)
		}
	}
	return out
}

// promQL turns a dashboard expression into one Prometheus evaluates.
func promQL(expr string) string {
	r := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "15s", "$__range", "1h", "$group", ".*", "${group}", ".*")
	return r.Replace(expr)
}

package opstest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runstream/runstream/internal/config"
)

// TestComposeHA checks the high-availability overlay (docs/OPERATIONS.md):
// a synchronous standby the primary names, components that get a
// multi-host URL asking for the writable server and a Sentinel URL, the
// ETL in a group of its own, and only real flags.
func TestComposeHA(t *testing.T) {
	root := moduleRoot(t)
	flags := knownFlags(t, root)
	docs := yamlDocs(t, filepath.Join(root, "deploy", "compose.ha.yaml"))
	var compose struct {
		Services map[string]struct {
			Command     []string       `yaml:"command"`
			Environment map[string]any `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := docs[0].Decode(&compose); err != nil {
		t.Fatalf("compose.ha.yaml: %v", err)
	}
	for _, s := range []string{"postgres", "postgres-standby", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3", "etl"} {
		if _, ok := compose.Services[s]; !ok {
			t.Errorf("compose.ha.yaml has no %s service", s)
		}
	}
	primary := strings.Join(compose.Services["postgres"].Command, " ")
	for _, want := range []string{"synchronous_standby_names=standby1", "synchronous_commit=on"} {
		if !strings.Contains(primary, want) {
			t.Errorf("the primary's command %q lacks %s", primary, want)
		}
	}
	script, err := os.ReadFile(filepath.Join(root, "deploy", "ha", "standby-entrypoint.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "application_name=standby1") {
		t.Error("the standby does not connect as application_name=standby1, the name synchronous_standby_names gives")
	}
	groups := map[string]string{}
	for _, comp := range []string{"api", "relay", "projector", "etl"} {
		env := compose.Services[comp].Environment
		for k := range env {
			checkFlagEnv(t, flags, "compose.ha.yaml service "+comp, k)
		}
		for _, k := range []string{"RUNSTREAM_POSTGRES_URL", "RUNSTREAM_ETL_DATABASE_URL"} {
			u, ok := env[k].(string)
			if !ok {
				continue
			}
			cfg, err := pgconn.ParseConfig(u)
			if err != nil {
				t.Errorf("%s %s: %v", comp, k, err)
				continue
			}
			if len(cfg.Fallbacks) == 0 || cfg.ValidateConnect == nil {
				t.Errorf("%s %s = %q names one server or does not ask for the writable one (target_session_attrs=read-write)", comp, k, u)
			}
		}
		if comp != "relay" {
			_, where, err := config.RedisClient(env["RUNSTREAM_REDIS_URL"].(string))
			if err != nil || !strings.Contains(where, "Sentinels") {
				t.Errorf("%s RUNSTREAM_REDIS_URL is not a Sentinel URL: %q %v", comp, where, err)
			}
		}
		if g, ok := env["RUNSTREAM_GROUP"].(string); ok && comp != "api" {
			groups[comp] = g
		}
	}
	if groups["etl"] == "" || groups["etl"] == groups["projector"] {
		t.Errorf("the ETL's group %q must be its own, not the projectors' %q", groups["etl"], groups["projector"])
	}
}

// TestOperationsRunbook: docs/OPERATIONS.md has a section for every alert
// the rules ship, and names no alert that does not exist.
func TestOperationsRunbook(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, r := range loadRules(t, filepath.Join(root, "deploy", "prometheus", "alerts.yml")) {
		alerts[r.name] = true
		if !strings.Contains(string(doc), "\n### "+r.name+"\n") {
			t.Errorf("docs/OPERATIONS.md has no section \"### %s\"", r.name)
		}
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok && strings.ToUpper(name) == name && !alerts[name] {
			t.Errorf("docs/OPERATIONS.md has a section for %s, which alerts.yml does not define", name)
		}
	}
}

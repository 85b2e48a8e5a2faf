// Package opstest holds the operations tests, which test the deployment
// artifacts in deploy/ rather than a Go package:
//
//   - the scrape test: a real Prometheus (Debian's prometheus package)
//     scrapes a `runstream dev --demo` subprocess on loopback, with the
//     shipped alert rules (deploy/prometheus/alerts.yml) loaded, until the
//     throughput counters and every series the rules read exist and every
//     rule evaluates with health "ok" on them; then SIGTERM must stop dev
//     with exit status 0 (graceful shutdown);
//   - the manifest test: every YAML file in deploy/ parses, the Grafana
//     dashboard is valid JSON whose queries, like the alert rules', name
//     metrics the code exports, the compose file and the Kubernetes
//     manifests set the documented RUNSTREAM_* variables (and only ones
//     that are real flags), and every Kubernetes Deployment has a readiness
//     probe on /readyz, a liveness probe on /healthz and a
//     PodDisruptionBudget;
//   - the docs tests: every relative link of every Markdown file of the
//     checkout (README.md, docs/, and the others) names a file inside the
//     repository that exists, and a heading there when it has a #fragment;
//     and no document, and no source file, comment or script, sends the
//     reader outside the repository (to the design notes or the folder
//     beside the checkout; only the peer-schema check's run-time path is
//     allowed): a clone is all a reader has. docs/ARCHITECTURE.md's
//     package table is checked against `go list` here too;
//   - the modules test: the nested test modules (the console's browser
//     tests, the OpenAPI contract test) compile the main module's versions
//     of every module both compile, so make test builds those packages
//     once.
//
// The alert rules' own unit tests are promtool's (deploy/prometheus/
// alerts_test.yml), run by scripts/test.sh.
package opstest

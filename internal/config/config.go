// Package config loads command settings from flags and the environment:
// every flag --some-name can also be set as RUNSTREAM_SOME_NAME, with
// precedence flag > environment > default (README.md, "Configuration"), and
// opens the clients a URL names (RedisClient). Only cmd/runstream and the
// benchmarks use it; components receive typed Config values and clients.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// EnvName returns the environment variable for a flag name:
// "postgres-url" -> "RUNSTREAM_POSTGRES_URL".
func EnvName(flagName string) string {
	return "RUNSTREAM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args into fs, then applies getenv(EnvName(f)) to every flag
// not given on the command line. A bad environment value is reported with
// the variable's name.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		env := EnvName(f.Name)
		v := getenv(env)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("invalid %s=%q (flag --%s): %w", env, v, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

// Usage returns a usage function for fs that lists every flag with its
// default and environment variable.
func Usage(fs *flag.FlagSet, synopsis, description string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags (each also settable as RUNSTREAM_<FLAG_NAME>):\n", synopsis, description)
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "  --%s\t%s%s\n      env %s\n", f.Name, f.Usage, def, EnvName(f.Name))
		})
	}
}

// Tokens parses RUNSTREAM_AUTH_TOKENS ("token1:tenantA,token2:tenantB")
// into a token -> tenant map. Empty means authentication is off.
func Tokens(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		tok, tenant, ok := strings.Cut(part, ":")
		tok, tenant = strings.TrimSpace(tok), strings.TrimSpace(tenant)
		if !ok || tok == "" || tenant == "" {
			return nil, fmt.Errorf("auth tokens (RUNSTREAM_AUTH_TOKENS) entry %d: want token:tenant, got %q", i+1, redact(part))
		}
		if _, dup := out[tok]; dup {
			return nil, fmt.Errorf("auth tokens (RUNSTREAM_AUTH_TOKENS) entry %d: a token is listed twice", i+1)
		}
		out[tok] = tenant
	}
	return out, nil
}

func redact(part string) string {
	if _, tenant, ok := strings.Cut(part, ":"); ok {
		return "***:" + tenant
	}
	if len(part) > 2 {
		return part[:2] + "***"
	}
	return "***"
}

// RedactURL hides the password of a connection URL for logs.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// CheckAddr validates a host:port listen address named by flag.
func CheckAddr(flagName, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--%s (%s) must be host:port, got %q: %w", flagName, EnvName(flagName), addr, err)
	}
	return nil
}

// Brokers splits a comma-separated broker list.
func Brokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

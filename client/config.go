package client

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/runstream/runstream/store"
)

// Defaults of the zero Config (ExecutionSemantics v1 section 5 for the
// budget and the two lists).
const (
	DefaultWriteLatencyBudget = 3 * time.Second
	DefaultMaxSpoolBytes      = 256 << 20
	DefaultBackoffBase        = 50 * time.Millisecond
	DefaultBackoffMax         = time.Second
	DefaultDrainInterval      = time.Second
	// minSpoolBytes keeps MaxSpoolBytes above one segment header and a
	// typical event.
	minSpoolBytes = 64 << 10
)

// DefaultFailOpen and DefaultNeverFailOpen are the contract's lists
// (ExecutionSemantics v1 section 5: failOpenForEventClass, neverFailOpen).
var (
	DefaultFailOpen      = []string{store.EventStepStarted}
	DefaultNeverFailOpen = []string{store.EventStepCompleted, store.EventStepFailed}
)

// Config configures a [Client]. The zero value of each field means the
// default noted; URL is required, and so is SpoolDir unless DisableFailOpen.
type Config struct {
	// URL is the API's base URL, for example http://127.0.0.1:8080.
	URL string
	// Token is sent as "Authorization: Bearer <Token>" when not empty.
	Token string
	// HTTPClient sends the requests; nil means a client of this package
	// with keep-alive connections enough for many concurrent appends. Its
	// Timeout, if any, bounds each attempt; the budget bounds the whole.
	HTTPClient *http.Client
	// WriteLatencyBudget bounds each Append and AppendBatch, retries and
	// the wait for the run's spooled events included
	// (writeLatencyBudgetMs); 0 means 3s. A caller's ctx that ends sooner
	// ends it sooner.
	WriteLatencyBudget time.Duration
	// FailOpen lists the event types that fail open: past the budget (or
	// on an outcome no retry repairs, such as a refused connection at the
	// budget's end or a TLS error) they are written to the spool and Append
	// returns a Result with Spooled set (failOpenForEventClass). nil means
	// [DefaultFailOpen] (StepStarted).
	FailOpen []string
	// NeverFailOpen lists the event types that must never fail open: past
	// the budget Append returns an error wrapping [ErrBudgetExceeded] and
	// the engine fails the step (neverFailOpen). nil means
	// [DefaultNeverFailOpen] (StepCompleted, StepFailed). A type in neither
	// list is treated like these: failing open is an exemption the
	// configuration grants, and a run-level event (RunCompleted) held back
	// silently would leave the run looking alive.
	NeverFailOpen []string
	// AllowEventTypes lists event types of the caller's own that Append and
	// AppendBatch send besides the contract's twelve ([KnownEventTypes]).
	// Any other type is refused locally with an [*UnknownEventTypeError]
	// ("did you mean StepStarted?"), since the API would store it as a new
	// type that no snapshot shows. Each must be PascalCase. nil means none:
	// the contract's types only.
	AllowEventTypes []string
	// DisableFailOpen makes every event type behave as NeverFailOpen, so no
	// SpoolDir is needed.
	DisableFailOpen bool
	// SpoolDir is the directory of the durable spool of fail-open events.
	// It is created if absent and locked (flock) for the Client's life:
	// one Client, in one process, per directory.
	SpoolDir string
	// MaxSpoolBytes bounds the spool's files; a fail-open event that would
	// pass it fails with [ErrSpoolFull]. 0 means 256 MiB.
	MaxSpoolBytes int64
	// BackoffBase and BackoffMax shape the retries: the n-th wait is
	// uniform in [0, min(BackoffMax, BackoffBase*2^(n-1))] (full jitter),
	// or the API's Retry-After when it sends one. 0 means 50ms and 1s.
	BackoffBase, BackoffMax time.Duration
	// DrainInterval is how long the background drainer waits after a
	// failed attempt to deliver the spool (doubling up to 30 times it while
	// the API keeps refusing). 0 means 1s.
	DrainInterval time.Duration
	// Logger receives warnings (torn spool tail cut, drain failures) and
	// errors (an event the API refused for good while draining). nil
	// discards.
	Logger *slog.Logger
}

var eventTypeRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// Validate reports every mistake in c, naming the field to change.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("client: Config.URL is empty; set the API's base URL, such as http://127.0.0.1:8080"))
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("client: Config.URL %q is not an API base URL; want http(s)://host[:port][/prefix], such as http://127.0.0.1:8080", c.URL))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"WriteLatencyBudget", c.WriteLatencyBudget}, {"BackoffBase", c.BackoffBase}, {"BackoffMax", c.BackoffMax}, {"DrainInterval", c.DrainInterval}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("client: Config.%s is %v; it must be > 0, or 0 for the default", d.name, d.v))
		}
	}
	for _, t := range c.AllowEventTypes {
		if !eventTypeRE.MatchString(t) {
			errs = append(errs, fmt.Errorf("client: Config.AllowEventTypes holds %q, which is not an event type (PascalCase, such as StepHeartbeat)", t))
		}
	}
	if c.BackoffBase > 0 && c.BackoffMax > 0 && c.BackoffMax < c.BackoffBase {
		errs = append(errs, fmt.Errorf("client: Config.BackoffMax (%v) is below Config.BackoffBase (%v)", c.BackoffMax, c.BackoffBase))
	}
	if c.MaxSpoolBytes < 0 || (c.MaxSpoolBytes > 0 && c.MaxSpoolBytes < minSpoolBytes) {
		errs = append(errs, fmt.Errorf("client: Config.MaxSpoolBytes is %d; it must be at least %d, or 0 for the default %d", c.MaxSpoolBytes, minSpoolBytes, DefaultMaxSpoolBytes))
	}
	failOpen, never := c.lists()
	for _, l := range []struct {
		name  string
		types []string
	}{{"FailOpen", failOpen}, {"NeverFailOpen", never}} {
		for _, t := range l.types {
			if !eventTypeRE.MatchString(t) {
				errs = append(errs, fmt.Errorf("client: Config.%s holds %q, which is not an event type (PascalCase, such as StepStarted)", l.name, t))
			}
		}
	}
	if !c.DisableFailOpen {
		for _, t := range failOpen {
			if slices.Contains(never, t) {
				errs = append(errs, fmt.Errorf("client: event type %q is in both Config.FailOpen and Config.NeverFailOpen; keep it in one", t))
			}
		}
		if c.SpoolDir == "" && len(failOpen) > 0 {
			errs = append(errs, fmt.Errorf("client: Config.SpoolDir is empty, but fail-open events (Config.FailOpen: %v) need a durable spool; set SpoolDir to a directory of this process, or set DisableFailOpen", failOpen))
		}
	}
	return errors.Join(errs...)
}

// lists returns FailOpen and NeverFailOpen with their defaults applied.
func (c Config) lists() (failOpen, never []string) {
	failOpen, never = c.FailOpen, c.NeverFailOpen
	if failOpen == nil {
		failOpen = DefaultFailOpen
	}
	if never == nil {
		never = DefaultNeverFailOpen
	}
	return failOpen, never
}

// setDefaults gives every zero field its default.
func (c *Config) setDefaults() {
	if c.WriteLatencyBudget == 0 {
		c.WriteLatencyBudget = DefaultWriteLatencyBudget
	}
	if c.MaxSpoolBytes == 0 {
		c.MaxSpoolBytes = DefaultMaxSpoolBytes
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffBase)
	}
	if c.DrainInterval == 0 {
		c.DrainInterval = DefaultDrainInterval
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.FailOpen, c.NeverFailOpen = c.lists()
	if c.DisableFailOpen {
		c.FailOpen = nil
	}
}

// defaultHTTPClient keeps enough idle connections for a busy engine: the
// standard library's default keeps two per host, and every further
// concurrent append would then open and close a connection of its own.
func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}}
}

// LogValue redacts the token.
func (c Config) LogValue() slog.Value {
	tok := ""
	if c.Token != "" {
		tok = "[redacted]"
	}
	return slog.GroupValue(slog.String("url", c.URL), slog.String("token", tok),
		slog.Duration("writeLatencyBudget", c.WriteLatencyBudget), slog.Any("failOpen", c.FailOpen),
		slog.Any("neverFailOpen", c.NeverFailOpen), slog.Any("allowEventTypes", c.AllowEventTypes), slog.String("spoolDir", c.SpoolDir),
		slog.Int64("maxSpoolBytes", c.MaxSpoolBytes))
}
